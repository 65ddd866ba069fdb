/*
 * fuzz_build.c -- the builder and the validator on random call sequences.
 *
 * Each input is a program: one byte picks a builder call, the next bytes
 * its arguments, raw (unknown enum values, negative and huge indices,
 * names with every awkward byte).  The calls run on up to two specs, with
 * clones, validations and wrappers in between.  Invariants: no crash, leak
 * or sanitizer report; every status is a wb_status with a message; a
 * failed call leaves the spec as it was (counts, validity); a spec that
 * validates emits clean C that compiles, and its clone validates alike.
 */
#include "fuzz.h"
#include "../src/spec/spec.h"

typedef struct build_in {
    const uint8_t *p;
    size_t n;
} build_in;

static unsigned build_byte(build_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static int build_int(build_in *in)
{
    /* Mostly small values, sometimes the edges of int. */
    unsigned b = build_byte(in);
    switch (b >> 6) {
    case 0: return (int)(b & 63) - 2;
    case 1: return (int)(b & 63) * 33 - 8;
    case 2: return (b & 1) ? 2147483647 : -2147483647 - 1;
    default: return (int)(build_byte(in) | build_byte(in) << 8 |
                          build_byte(in) << 16 | build_byte(in) << 24);
    }
}

/* A name of up to 300 bytes over an alphabet of the troublesome ones. */
static void build_name(build_in *in, char *buf)
{
    static const char alphabet[] = "ab_*/\n\"\\#?'%{};\t\x80\xff\xc3\xa9Z0";
    unsigned len = build_byte(in);
    if (len == 255)
        len = WB_MAX_NAME + (build_byte(in) & 3) - 1;
    for (unsigned i = 0; i < len; i++)
        buf[i] = alphabet[build_byte(in) % (sizeof alphabet - 1)];
    buf[len] = '\0';
}

static int build_hook(void *ud) { (void)ud; return 0; }
static void build_leave(void *ud) { (void)ud; }

/* What a failed builder call must leave alone. */
typedef struct build_shape {
    int ninputs, noutputs, nbases, nguards;
    bool valid;
} build_shape;

static build_shape build_shape_of(const wb_spec *s)
{
    return (build_shape){s->ninputs, s->noutputs, s->nbases, s->nguards,
                         s->valid};
}

static void build_validated(wb_spec *s)
{
    wb_status st = wb_spec_validate(s);
    wbf_status_ok(st, "wb_spec_validate");
    wb_spec *c = NULL;
    wb_status sc = wb_spec_clone(s, &c);
    wbf_status_ok(sc, "wb_spec_clone");
    if (sc == WB_OK) {
        sc = wb_spec_validate(c);
        WBF_CHECK(sc == st || sc == WB_ERR_NOMEM || st == WB_ERR_NOMEM,
                  "the spec validates with %s, its clone with %s",
                  wb_status_str(st), wb_status_str(sc));
        wb_spec_free(c);
    }
    if (st != WB_OK)
        return;
    WBF_CHECK(s->nvalues == s->nupdated + s->noutputs + s->nbases &&
                  s->nupdated <= s->ninputs,
              "inconsistent derived counts");
    wbf_check_code(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    build_in in = {data, size};
    wb_spec *specs[2] = {NULL, NULL};
    char name[WB_MAX_NAME + 8];
    int steps = 0;
    while (in.n && steps++ < 256) {
        unsigned op = build_byte(&in) % 20, which = op & 1;
        wb_spec *s = specs[which];
        wb_status st = WB_OK;
        if (!s && op >= 2) {
            build_name(&in, name);
            st = wb_spec_new(name, &specs[which]);
            wbf_status_ok(st, "wb_spec_new");
            WBF_CHECK(st == WB_OK || specs[which] == NULL,
                      "wb_spec_new wrote its output on failure");
            continue;
        }
        build_shape before = s ? build_shape_of(s) : (build_shape){0};
        bool grows = false;
        switch (op) {
        case 0: case 1:
            wb_spec_free(s);
            specs[which] = NULL;
            build_name(&in, name);
            st = wb_spec_new(build_byte(&in) & 1 ? name : NULL, &specs[which]);
            wbf_status_ok(st, "wb_spec_new");
            continue;
        case 2: case 3: {
            build_name(&in, name);
            int mut = build_int(&in);
            unsigned flags = build_byte(&in) & 0x1f;
            st = wb_spec_add_tensor(s, name, (wb_mutation)mut, flags, NULL);
            grows = true;
            break;
        }
        case 4:
            build_name(&in, name);
            st = wb_spec_add_scalar(s, name, (wb_scalar_type)build_int(&in),
                                    NULL);
            grows = true;
            break;
        case 5: {
            int idx = build_int(&in);
            DLDataType dt = {(uint8_t)build_byte(&in), (uint8_t)build_byte(&in),
                             (uint16_t)(build_byte(&in) % 3)};
            st = wb_spec_declare_input(s, idx, dt, build_int(&in));
            break;
        }
        case 6: case 7: {
            build_name(&in, name);
            int kind = build_int(&in), base = build_int(&in);
            bool rg = build_byte(&in) & 1;
            uint64_t dyn = (uint64_t)build_int(&in);
            st = wb_spec_add_output(s, name, (wb_alias)kind, base, rg, dyn,
                                    NULL);
            grows = true;
            break;
        }
        case 8:
            st = wb_spec_set_intermediate_bases(s, build_int(&in));
            break;
        case 9:
            st = wb_spec_set_training(s, build_byte(&in) & 1);
            break;
        case 10:
            st = wb_spec_set_keep_input_mutations(s, build_byte(&in) & 1);
            break;
        case 11:
            st = wb_spec_set_grad_mode_at_end(s, build_int(&in));
            break;
        case 12:
            st = build_byte(&in) & 1
                     ? wb_spec_set_before_call(s, build_hook, NULL)
                     : wb_spec_set_first_call(s, build_byte(&in) & 1
                                                     ? build_hook : NULL,
                                              NULL);
            break;
        case 13:
            st = wb_spec_add_guard(s, build_byte(&in) & 1 ? build_hook : NULL,
                                   build_leave, NULL);
            break;
        case 14: case 15:
            build_validated(s);
            continue;
        case 16: {
            /* Many of one item at once, to reach the limits. */
            int n = build_byte(&in) * 8 + 1;
            unsigned what = build_byte(&in) % 3;
            for (int i = 0; i < n && st == WB_OK; i++)
                st = what == 0 ? wb_spec_add_tensor(s, "t", WB_MUT_NONE, 0, NULL)
                   : what == 1 ? wb_spec_add_scalar(s, "k", WB_SCALAR_INT, NULL)
                               : wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS,
                                                    -1, false, 0, NULL);
            wbf_status_ok(st, "a run of adds");
            continue;
        }
        case 17: {
            wb_spec *c = NULL;
            st = wb_spec_clone(s, &c);
            wbf_status_ok(st, "wb_spec_clone");
            if (st == WB_OK) {
                wb_spec_free(specs[!which]);
                specs[!which] = c;
            }
            continue;
        }
        case 18: {
            /* The facts never fail on an unvalidated or odd index. */
            int i = build_int(&in);
            (void)wb_spec_direction(s, i);
            (void)wb_spec_c_type(s, i);
            WBF_CHECK(s->valid || (wb_spec_num_values(s) == -1 &&
                                   wb_spec_signature(s) == NULL),
                      "a fact derived from an unvalidated spec");
            continue;
        }
        default: {
            wb_options o = {.tier = build_byte(&in) & 1 ? WB_TIER_INTERP
                                                          : WB_TIER_TCC};
            wb_wrapper *w = NULL;
            wb_status sv = wb_spec_validate(s);
            st = wb_wrapper_new(s, wbf_graph, NULL, &o, &w);
            wbf_status_ok(st, "wb_wrapper_new");
            WBF_CHECK(st == sv || st == WB_ERR_NOMEM,
                      "validate says %s, wb_wrapper_new %s",
                      wb_status_str(sv), wb_status_str(st));
            wb_wrapper_free(w);
            continue;
        }
        }
        wbf_status_ok(st, "a builder call");
        build_shape after = build_shape_of(s);
        if (st != WB_OK)
            WBF_CHECK(before.ninputs == after.ninputs &&
                          before.noutputs == after.noutputs &&
                          before.nbases == after.nbases &&
                          before.nguards == after.nguards &&
                          before.valid == after.valid,
                      "builder op %u failed (%s) but changed the spec", op,
                      wb_status_str(st));
        else if (grows)
            WBF_CHECK(after.ninputs + after.noutputs ==
                          before.ninputs + before.noutputs + 1 && !after.valid,
                      "builder op %u succeeded without adding one item", op);
    }
    wb_spec_free(specs[0]);
    wb_spec_free(specs[1]);
    return 0;
}
