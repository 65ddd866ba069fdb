/*
 * fuzz_parse.c -- the spec text parser and the CLI's readers on arbitrary
 * bytes.
 *
 * One input is read four ways: as a spec by wb_spec_parse (up to its first
 * NUL, as a C caller would pass it), as a schema by wb_schema_parse with
 * every accessor called, and as a file by the CLI's text reader, YAML
 * reader and allowlist reader, each entry they find parsed in turn.
 * Invariants: no crash, leak or sanitizer report; every status is a
 * wb_status with a message; a message holds only printable ASCII and
 * newlines; a spec that validates emits clean C that compiles.
 */
#include <unistd.h>

#include "fuzz.h"
#include "../src/cli/input.h"
#include "../src/spec/schema.h"
#include "../src/spec/spec.h"

/* Messages may quote the input, but escaped: no raw control or non-ASCII
   byte reaches a terminal or a log through them. */
static void parse_check_message(const char *what)
{
    for (const unsigned char *p = (const unsigned char *)wb_last_error(); *p;
         p++)
        WBF_CHECK(*p == '\n' || (*p >= 0x20 && *p < 0x7f),
                  "%s: byte 0x%02x in the message '%s'", what, *p,
                  wb_last_error());
}

static void parse_spec(const char *text)
{
    wb_spec *s = NULL;
    wb_status st = wb_spec_parse(text, &s);
    wbf_status_ok(st, "wb_spec_parse");
    if (st != WB_OK) {
        WBF_CHECK(s == NULL, "wb_spec_parse wrote its output on failure");
        parse_check_message("wb_spec_parse");
        return;
    }
    st = wb_spec_validate(s);
    wbf_status_ok(st, "wb_spec_validate");
    if (st == WB_OK) {
        WBF_CHECK(wb_spec_num_values(s) ==
                      wb_spec_num_updated(s) + wb_spec_num_outputs(s) +
                          s->nbases,
                  "N is not M + outputs + bases");
        for (int i = 0; i < wb_spec_num_inputs(s); i++)
            WBF_CHECK(wb_spec_direction(s, i) >= WB_DIR_IN &&
                          wb_spec_direction(s, i) <= WB_DIR_SCALAR &&
                          wb_spec_c_type(s, i) != NULL,
                      "input %d has no direction or C type", i);
        WBF_CHECK(wb_spec_signature(s) != NULL, "no signature");
        wbf_check_code(s);
    } else {
        parse_check_message("wb_spec_validate");
    }
    wb_spec_free(s);
}

static void parse_schema(const char *text)
{
    wb_schema *sc = NULL;
    wb_status st = wb_schema_parse(text, "fuzz", 1, &sc);
    wbf_status_ok(st, "wb_schema_parse");
    if (st != WB_OK) {
        parse_check_message("wb_schema_parse");
        return;
    }
    size_t sum = strlen(wb_schema_name(sc)) + strlen(wb_schema_base_name(sc)) +
                 strlen(wb_schema_namespace(sc));
    for (int i = 0; i < wb_schema_num_args(sc); i++) {
        const char *dflt = wb_schema_arg_default(sc, i);
        sum += strlen(wb_schema_arg_name(sc, i)) +
               strlen(wb_schema_arg_type(sc, i)) +
               strlen(wb_schema_arg_ctype(sc, i)) + (dflt ? strlen(dflt) : 0);
        sum += (size_t)wb_schema_arg_dir(sc, i) +
               (size_t)wb_schema_arg_mutation(sc, i) +
               wb_schema_arg_flags(sc, i) + wb_schema_arg_kwonly(sc, i);
        if (dflt)
            for (const unsigned char *p = (const unsigned char *)dflt; *p; p++)
                WBF_CHECK(*p >= 0x20 && *p < 0x7f,
                          "byte 0x%02x in a default", *p);
    }
    for (int k = 0; k < wb_schema_num_returns(sc); k++) {
        sum += strlen(wb_schema_return_name(sc, k)) +
               strlen(wb_schema_return_type(sc, k)) +
               strlen(wb_schema_alias_name(wb_schema_return_alias(sc, k)));
        int b = wb_schema_return_base(sc, k);
        WBF_CHECK(b >= -1 && b < wb_schema_num_args(sc) + wb_schema_num_bases(sc)
                      + wb_schema_num_returns(sc),
                  "return %d has base %d", k, b);
        sum += (size_t)wb_schema_return_kind(sc, k) +
               (size_t)wb_schema_return_spec_base(sc, k);
    }
    const char *why = wb_schema_unwrappable(sc);
    wb_spec *s = NULL;
    st = wb_schema_to_spec(sc, &s);
    wbf_status_ok(st, "wb_schema_to_spec");
    WBF_CHECK((st == WB_ERR_SPEC) == (why != NULL) || st == WB_ERR_NOMEM,
              "wb_schema_to_spec says %s, wb_schema_unwrappable says %s",
              wb_status_str(st), why ? why : "(wrappable)");
    if (st == WB_OK) {
        if (wb_spec_validate(s) == WB_OK)
            wbf_check_code(s);
        wb_spec_free(s);
    }
    wb_schema_free(sc);
    (void)sum;
}

/* A private folder for the files the CLI readers take, made once. */
static char parse_dir[64];

static void parse_cleanup(void)
{
    char path[128];
    const char *names[] = {"in.txt", "in.yaml", "allow"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", parse_dir, names[i]);
        unlink(path);
    }
    rmdir(parse_dir);
}

static const char *parse_write(const char *name, const uint8_t *data,
                               size_t size)
{
    static char path[128];
    if (!parse_dir[0]) {
        const char *tmp = getenv("TMPDIR");
        snprintf(parse_dir, sizeof parse_dir, "%s/wbfuzz.XXXXXX",
                 tmp && strlen(tmp) < 40 ? tmp : "/tmp");
        WBF_CHECK(mkdtemp(parse_dir) != NULL, "cannot make a folder");
        atexit(parse_cleanup);
    }
    snprintf(path, sizeof path, "%s/%s", parse_dir, name);
    FILE *f = fopen(path, "wb");
    WBF_CHECK(f && fwrite(data, 1, size, f) == size && fclose(f) == 0,
              "cannot write %s", path);
    return path;
}

static void parse_file(const char *path)
{
    wb_cli_entries es = {0};
    char *err = NULL;
    int rc = wb_cli_read_file(path, &es, &err);
    WBF_CHECK((rc == 0) == (err == NULL), "read_file: rc %d, err %s", rc,
              err ? err : "NULL");
    free(err);
    for (size_t i = 0; i < es.n; i++) {
        WBF_CHECK((es.v[i].text == NULL) != (es.v[i].error == NULL),
                  "entry %zu has both or neither text and error", i);
        WBF_CHECK(es.v[i].line >= 1 && es.v[i].col >= 1,
                  "entry %zu at %d:%d", i, es.v[i].line, es.v[i].col);
        if (!es.v[i].text)
            continue;
        char *name = wb_cli_text_name(es.v[i].text);
        if (name)
            (void)wb_cli_name_matches(name, "aten::add.Tensor");
        free(name);
        parse_spec(es.v[i].text);
    }
    wb_cli_entries_free(&es);
}

static void parse_allowlist(const char *path)
{
    wb_cli_allowlist al = {0};
    char *err = NULL;
    if (wb_cli_allowlist_read(path, &al, &err) == 0) {
        (void)wb_cli_allowlist_takes(&al, "aten::add.Tensor");
        (void)wb_cli_allowlist_takes(&al, "add");
        for (size_t i = 0; i < al.n; i++)
            (void)wb_cli_name_matches(al.names[i], al.names[0]);
    }
    free(err);
    wb_cli_allowlist_free(&al);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    parse_spec(text);
    parse_schema(text);
    free(text);
    parse_file(parse_write("in.txt", data, size));
    parse_file(parse_write("in.yaml", data, size));
    parse_allowlist(parse_write("allow", data, size));
    wb_thread_cache_flush();
    return 0;
}
