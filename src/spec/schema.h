/*
 * schema.h -- ATen function schemas with wrapbake's extension (internal).
 *
 * The grammar and its mapping onto the spec IR are documented in
 * docs/spec-format.md.  A wb_schema is what a line of text says, kept for
 * tools that show it (wrapbake check); wb_schema_to_spec turns it into a
 * wb_spec, or says why it cannot be wrapped.
 */
#ifndef WB_SCHEMA_H
#define WB_SCHEMA_H

#include "wrapbake.h"

typedef struct wb_schema wb_schema;

/* How a return relates to the parameters, as `wrapbake check` names it. */
typedef enum wb_schema_alias {
    WB_SCHEMA_NONE = 0,            /* "none" */
    WB_SCHEMA_IS_INPUT,            /* "is_input" */
    WB_SCHEMA_ALIAS_OF_INPUT,      /* "alias_of_input" */
    WB_SCHEMA_ALIAS_OF_INTERMEDIATE/* "alias_of_intermediate" */
} wb_schema_alias;

/* Parses one spec from text (which may span lines).  line is the number of
   the text's first line and file (may be NULL) its file, both only for
   messages.  On a syntax error the status is WB_ERR_SPEC and the message
   reads "FILE:LINE:COL: expected ...", then the line, then a caret under
   the column; an error only the whole schema shows (two items with one
   name, a misplaced attribute) reads "FILE:LINE:COL: parameter 2 'x': ..."
   or "... return 0: ...", with the line and caret too.  A schema has at
   most 256 distinct alias sets (each "Tensor!" makes one); one more is a
   syntax error, "... too many alias sets: ...".  A schema that parses but
   cannot be wrapped parses: see wb_schema_unwrappable. */
wb_status wb_schema_parse(const char *text, const char *file, int line,
                          wb_schema **out);
void wb_schema_free(wb_schema *sc);

/* The name with its overload ("add_.Tensor"), and the base name ("add_"),
   both without the namespace; the namespace ("aten", or "" when none). */
const char *wb_schema_name(const wb_schema *sc);
const char *wb_schema_base_name(const wb_schema *sc);
const char *wb_schema_namespace(const wb_schema *sc);

/* Parameters in declaration order, keyword-only ones included. */
int wb_schema_num_args(const wb_schema *sc);
const char *wb_schema_arg_name(const wb_schema *sc, int i);
/* The type as ATen writes it, annotation included: "Tensor(a!)", "Tensor!",
   "int[2]?". */
const char *wb_schema_arg_type(const wb_schema *sc, int i);
wb_direction wb_schema_arg_dir(const wb_schema *sc, int i);
/* "wb_tensor *", "int64_t", "double", "bool", "const void *"; for a list
   of tensors of known length "wb_tensor *[]" (an argument per element),
   for one of unknown length "wb_tensor **". */
const char *wb_schema_arg_ctype(const wb_schema *sc, int i);
/* The default as ATen prints it ("1", "[1, 1]", "None"), or NULL; escaped
   as wb_spec_print_name shows text, so that no raw byte of the input
   leaves the parser: bytes outside printable ASCII, backslashes and the
   first byte of a "/" "*" or "*" "/" pair as \xHH, and at most 64 bytes of
   the default, then "..." ("'a\x09b'" for a tab between a and b). */
const char *wb_schema_arg_default(const wb_schema *sc, int i);
/* The mutation a '!' parameter gets (data; storage for ATen's set_,
   resize for its resize_ and resize_as_; metadata with the graph attribute
   inplace_view for any other op; unless an attribute of its own says
   otherwise; WB_MUT_NONE for others), and its WB_INPUT_DETACH and
   WB_INPUT_HIDDEN flags from the extension. */
wb_mutation wb_schema_arg_mutation(const wb_schema *sc, int i);
unsigned wb_schema_arg_flags(const wb_schema *sc, int i);
/* What the extension declares of parameter i: its dtype's name as the
   format writes it (NULL: none), its ndim (-1: none) and its device
   ("cpu", "cuda:N"; NULL: none), in buf of n bytes. */
const char *wb_schema_arg_dtype(const wb_schema *sc, int i);
int wb_schema_arg_ndim(const wb_schema *sc, int i);
const char *wb_schema_arg_device(const wb_schema *sc, int i, char *buf,
                                 size_t n);
/* The earlier parameter it duplicates ([duplicate=NAME]), or -1. */
int wb_schema_arg_dup_of(const wb_schema *sc, int i);
/* The earlier parameter whose storage it lies on, which makes both
   members of one synthetic base ([aliases=NAME]), or -1. */
int wb_schema_arg_alias_of(const wb_schema *sc, int i);
/* Whether it is a member of a synthetic base: it lies on an earlier
   parameter's storage, or a later one lies on its. */
bool wb_schema_arg_member(const wb_schema *sc, int i);
/* The graph's effect tokens (with effect_tokens=N). */
int wb_schema_num_tokens(const wb_schema *sc);
/* Whether the graph asks for functionalized RNG (with functional_rng). */
bool wb_schema_rng(const wb_schema *sc);
/* Whether the parameter comes after the keyword-only marker '*'. */
bool wb_schema_arg_kwonly(const wb_schema *sc, int i);

/* The spec inputs parameter i makes: one per element of a tensor list of
   known length ("Tensor[3] xs" makes xs[0], xs[1], xs[2], each with the
   list's attributes), else one; the first in *first (may be NULL). */
long wb_schema_arg_inputs(const wb_schema *sc, int i, long long *first);
/* Whether parameter i is a tensor list of known length, and return k a
   list of known length: items whose elements are inputs or outputs. */
bool wb_schema_arg_listed(const wb_schema *sc, int i);
bool wb_schema_return_listed(const wb_schema *sc, int k);

/* Returns. */
int wb_schema_num_returns(const wb_schema *sc);
/* The spec outputs return k makes, as wb_schema_arg_inputs says of
   parameters: one per element of a list of known length, else one. */
long wb_schema_return_outputs(const wb_schema *sc, int k, long long *first);
/* Whether list return k has the alias set of a list parameter as long as
   it, so that element j is or aliases the parameter's element j. */
bool wb_schema_return_elementwise(const wb_schema *sc, int k);
/* For a return that is a number the wrapper passes through, the C type of
   its wb_value member ("int64_t", "double", "bool"), "None" for None;
   NULL for a tensor and for what cannot be passed. */
const char *wb_schema_return_number(const wb_schema *sc, int k);
/* The return's name, "" when it has none. */
const char *wb_schema_return_name(const wb_schema *sc, int k);
const char *wb_schema_return_type(const wb_schema *sc, int k);
/* A return of an alias set that has a [base] return is alias_of_intermediate
   (its base is that return, see wb_schema_return_spec_base); the [base]
   return itself is none. */
wb_schema_alias wb_schema_return_alias(const wb_schema *sc, int k);
/* The parameter index a return aliases, the intermediate base's index for
   alias_of_intermediate, or -1 (also for the returns of a set with a [base]
   return, and for an is_input or alias_of_input return whose parameter
   cannot be told: one in the wildcard set, Tensor(*), or naming a set that
   several parameters share). */
int wb_schema_return_base(const wb_schema *sc, int k);
const char *wb_schema_alias_name(wb_schema_alias a);
/* What the return becomes in the spec: the alias kind and base that
   wb_spec_add_output receives (for the returns of a set with a [base]
   return, alias-of-intermediate-base-is-user-output and that return's
   index; for a return whose parameter cannot be told, is-input or
   alias-of-input and -1).  Available whether or not the schema can be
   wrapped. */
wb_alias wb_schema_return_kind(const wb_schema *sc, int k);
int wb_schema_return_spec_base(const wb_schema *sc, int k);
/* The number of intermediate bases the spec declares. */
int wb_schema_num_bases(const wb_schema *sc);

/* NULL when the schema can be wrapped, else why not (owned by sc). */
const char *wb_schema_unwrappable(const wb_schema *sc);

/* The spec the schema describes, not yet validated; WB_ERR_SPEC with the
   reason of wb_schema_unwrappable when there is none. */
wb_status wb_schema_to_spec(const wb_schema *sc, wb_spec **out);

#endif /* WB_SCHEMA_H */
