/*
 * spec.h -- the spec IR and the facts derived from it (internal).
 *
 * The builder fills the item arrays; wb_spec_validate checks them and derives
 * the compact lists below, which are all that the interpreter walks and all
 * that the emitter reads.  Both tiers consume exactly these lists, so they
 * cannot disagree about what a spec means.
 */
#ifndef WB_SPEC_H
#define WB_SPEC_H

#include "wrapbake.h"

typedef struct wb_input {
    char *name;
    bool is_tensor;
    wb_scalar_type scalar;
    wb_mutation mutation;
    unsigned flags;
    DLDataType dtype;    /* bits == 0: any dtype */
    int ndim;            /* -1: any ndim */
    DLDevice device;     /* device_type 0: any device */
    int dup_of;          /* the earlier input it duplicates, or -1 */
    int alias_of;        /* the earlier input whose storage it lies on, in
                            one synthetic base, or -1 */
} wb_input;

typedef struct wb_output {
    char *name;
    wb_scalar_type scalar;  /* 0: a tensor; else the number (or None) it
                               is, of kind non-alias */
    wb_alias kind;
    int base;
    bool requires_grad;
    uint64_t dyn;
} wb_output;

typedef struct wb_guard {
    wb_hook_fn enter;
    wb_leave_fn leave;
    void *ud;
} wb_guard;

/* One runtime mutation: input `input` is written back from value `value`;
   for the data mutation of synthetic base g, input is g - ngroups, below
   every input and rising with g, as the inputs do (wb_spec_synth). */
typedef struct wb_spec_mut {
    int input;
    wb_mutation kind;
} wb_spec_mut;

/* How one user output is produced. */
typedef struct wb_spec_out {
    wb_scalar_type scalar; /* 0: a tensor; else a number passed through */
    wb_alias kind;      /* folded: the non-alias variants become NON_ALIAS,
                           the save-as-output variant ALIAS_OF_INTERMEDIATE */
    int value;          /* the graph value it starts from: M + output */
    int base;           /* input index, or the graph value of the base */
    int holder;         /* for views of an input whose storage set_ will
                           replace: the updated value that brings the new
                           storage; else -1 (the base itself holds it) */
    int grow;           /* for views of an input that resize_ may grow: its
                           mutation slot; else -1 */
    int group;          /* for views of a member of a synthetic base: the
                           group, whose base is the view's holder (the view
                           shares the base's counter); else -1 */
    int requires_grad;  /* 0 or 1 (ignored for is-input) */
    uint64_t dyn;
} wb_spec_out;

struct wb_spec {
    char *name;
    wb_input *inputs;
    int ninputs, cap_inputs;
    wb_output *outputs;
    int noutputs, cap_outputs;
    int nbases;
    int ntokens;                /* effect tokens */
    bool rng;                   /* functionalized RNG: seed and offset in,
                                   the new offset out */
    wb_rng_get_fn rng_get;
    wb_rng_set_fn rng_set;
    void *rng_ud;
    bool training;
    bool keep_input_mutations;
    int grad_at_end;            /* -1, 0 or 1 */
    wb_hook_fn before_call;
    void *before_call_ud;
    wb_hook_fn first_call;
    void *first_call_ud;
    wb_guard guards[WB_MAX_GUARDS];
    int nguards;

    /* Derived by wb_spec_validate, and by nothing else: only a valid spec
       holds the derived lists below (a validation that fails drops what
       it made), which is what lets wb_spec_forget skip an invalid one. */
    bool valid;
    bool device_copies;         /* see wb_spec_mut_on_device */
    int nvalues;                /* N = M + outputs + bases + metadata
                                   members, after the tokens: the graph
                                   returns ntokens + N values, and the RNG
                                   offset last */
    int nupdated;               /* M */
    int nreturned;              /* all the graph returns: tokens, N, the
                                   RNG offset */
    int nargs;                  /* the graph's: tokens, synthetic bases,
                                   kept inputs, members, RNG seed and
                                   offset */
    int *arg_at;                /* per input, its graph argument: -1 for
                                   a duplicate; for a member of a
                                   synthetic base, the one that gives the
                                   graph its view */
    int *dups;                  /* inputs that duplicate earlier ones */
    int ndups;
    int *tensor_inputs;         /* every tensor input, for NULL checks */
    int ntensor_inputs;
    int *declared;              /* tensor inputs with a declared dtype/ndim */
    int ndeclared;
    int *bumped;                /* in-graph mutations seen by autograd:
                                   inputs, or synthetic base g as
                                   g - ngroups (wb_spec_synth) */
    int nbumped;
    int *hidden;                /* in-graph mutations hidden from it: their
                                   versions are put back after the call
                                   (inputs or bases, as bumped) */
    int nhidden;
    int *detached;              /* inputs detached before a training call */
    int ndetached;
    wb_spec_mut *muts;          /* M runtime mutations, value i for muts[i]:
                                   the synthetic bases' mutated after the
                                   graph first, then the inputs' in order */
    int *mut_at;                /* per input, its index in muts, or -1 */
    /* Synthetic bases (AOTAutograd's AOTSyntheticBaseWrapper): inputs
       that lie on one storage, merged into one base the graph gets, the
       groups in order of their first members. */
    int ngroups;
    int *group_of;              /* per input, its group, or -1 */
    int *group_first;           /* per group, its first member */
    int *meta_members;          /* members whose view the graph changes,
                                   in input order: each one's value comes
                                   after the outputs, before the
                                   intermediate bases */
    int nmeta_members;
    int *reshaped;              /* inputs whose view or storage a mutation
                                   changes: metadata, set_, resize */
    int nreshaped;
    wb_spec_out *outs;          /* one per output */
    int nscalar_outs;           /* outputs that are numbers, not tensors */
    int nviews;                 /* outputs made as views of a base */
    bool moved_reads;           /* a mutation that changes an input's view
                                   or storage (wb_mutation_moves) commits
                                   before the commit reads a graph value:
                                   the call checks that no such value is
                                   that input (wb_rt_check_moved) */
    bool grad_writes;           /* training, and an input's data is
                                   written back: it takes requires-grad
                                   from its value (wb_rt_take_grads) */
    wb_direction *dirs;         /* one per input */
    char *signature;
};

/* A spec's text rendered byte-safe, at most 64 bytes: for comments in
   generated code (printable ASCII but * / ? and backslash, as \xHH), and
   for messages (printable ASCII, backslash and comment delimiters
   escaped). */
void wb_spec_safe_name(const char *name, char *buf, size_t n);
/* Both write into buf and print_name returns it. */
const char *wb_spec_print_name(const char *name, char *buf, size_t n);
/* Whether mutation m of a validated spec copies into an input that may be
   on a device (data, data+metadata or resize of an input not declared on
   the CPU).  A spec with one (device_copies) ends its calls with the
   device write-back, wb_rt_flush. */
bool wb_spec_mut_on_device(const wb_spec *s, const wb_spec_mut *m);
/* The synthetic base mutation input `input` (of wb_spec_mut) writes into,
   or -1 for an input's. */
static inline int wb_spec_synth(const wb_spec *s, int input)
{
    return input < 0 ? input + s->ngroups : -1;
}
/* Whether value v of a validated spec (counted from the first updated
   input, after the effect tokens) is a tensor: every value is but the
   outputs that are numbers. */
static inline bool wb_spec_value_is_tensor(const wb_spec *s, int v)
{
    int k = v - s->nupdated;
    return !s->nscalar_outs || k < 0 || k >= s->noutputs ||
           !s->outs[k].scalar;
}

const char *wb_mutation_name(wb_mutation m);
/* Whether mutation m changes its tensor's view or storage: metadata,
   data_metadata, storage (set_) or resize. */
static inline bool wb_mutation_moves(wb_mutation m)
{
    return m == WB_MUT_METADATA || m == WB_MUT_DATA_METADATA ||
           m == WB_MUT_STORAGE || m == WB_MUT_RESIZE;
}
/* Whether mutation m copies data into its tensor: data, data_metadata
   or resize. */
static inline bool wb_mutation_copies(wb_mutation m)
{
    return m == WB_MUT_DATA || m == WB_MUT_DATA_METADATA ||
           m == WB_MUT_RESIZE;
}
const char *wb_alias_name(wb_alias a);
/* The C type a number is passed as ("int64_t", "double", "bool",
   "const void *" for an opaque argument), "None" for None; NULL for
   anything else. */
const char *wb_scalar_c_type(wb_scalar_type t);
const char *wb_direction_name(wb_direction d);

#endif /* WB_SPEC_H */
