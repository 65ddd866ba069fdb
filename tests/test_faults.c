/*
 * Call-time faults that tests/test_errors.c leaves out: a graph that hands
 * back an input as its own updated value or one tensor for two values, and
 * inputs that overlap without being the same view.  Each call either
 * succeeds with the result PyTorch's copy_ order gives, or fails and
 * leaves every input as it was -- bytes, view, version, reference counts.
 */
#include "helpers.h"

typedef struct faults_graph {
    wb_tensor *vals[4];
    int n;
} faults_graph;

static int faults_fn(void *ctx, const wb_arg *a, int na, wb_value *v,
                     int nv)
{
    faults_graph *g = ctx;
    (void)a; (void)na;
    for (int i = 0; i < nv && i < g->n; i++)
        v[i].t = wb_tensor_retain(g->vals[i]);
    return g->n;
}

/* The bytes of a tensor's whole storage, its version and its refcount. */
typedef struct faults_snap {
    float data[16];
    uint64_t version;
    long refcount;
    int64_t offset;
} faults_snap;

static faults_snap faults_snap_of(const wb_tensor *t)
{
    faults_snap s;
    memset(&s, 0, sizeof s);
    memcpy(s.data, wb_storage_data(wb_tensor_storage(t)),
           wb_storage_nbytes(wb_tensor_storage(t)));
    s.version = wb_tensor_version(t);
    s.refcount = wb_tensor_refcount(t);
    s.offset = wb_tensor_offset(t);
    return s;
}

static void faults_assert_same(const faults_snap *a, const faults_snap *b,
                               const char *what)
{
    cr_assert_eq(memcmp(a->data, b->data, sizeof a->data), 0,
                 "%s: bytes changed", what);
    cr_assert_eq(a->version, b->version, "%s: version changed", what);
    cr_assert_eq(a->refcount, b->refcount, "%s: refcount changed", what);
    cr_assert_eq(a->offset, b->offset, "%s: view changed", what);
}

/* Asserts that each of the n tensors t is as its snapshot in before. */
static void faults_assert_unchanged(const faults_snap *before,
                                    wb_tensor *const *t, int n,
                                    const char *what)
{
    for (int i = 0; i < n; i++) {
        faults_snap after = faults_snap_of(t[i]);
        faults_assert_same(&before[i], &after, what);
    }
}

/* The graph returns the data-mutated input itself as its updated value:
   copying a tensor onto itself changes no byte. */
Test(faults, updated_value_is_the_input_itself)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("self_update", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        wb_tensor *x = wbt_f32(1, 1, 4);
        faults_graph g = {{x}, 1};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[1] = {{.t = x}};
        faults_snap before = faults_snap_of(x);
        wb_status st = wb_call(w, a, 1, NULL, 0);
        faults_snap after = faults_snap_of(x);
        cr_assert_eq(memcmp(before.data, after.data, sizeof before.data), 0,
                     "%s: a copy onto itself changed bytes",
                     wb_tier_name(tier));
        if (st == WB_OK)
            cr_assert_eq(after.version, before.version + 1);
        else
            faults_assert_same(&before, &after, wb_tier_name(tier));
        wb_wrapper_free(w);
        wbt_release_last(x);
        wb_spec_free(s);
    }
}

/* One tensor handed back for two values (retained twice): both inputs get
   its data, and no reference is lost or kept. */
Test(faults, one_value_for_two_inputs)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("shared_value", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 4), *y = wbt_f32(10, 1, 4);
        wb_tensor *v = wbt_f32(100, 1, 4);
        faults_graph g = {{v, v}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[2] = {{.t = x}, {.t = y}};
        WBT_OK(wb_call(w, a, 2, NULL, 0));
        cr_assert_eq(wbt_at(x, 3), 103.0f);
        cr_assert_eq(wbt_at(y, 0), 100.0f);
        cr_assert_eq(wb_tensor_version(x), 1);
        cr_assert_eq(wb_tensor_version(y), 1);
        wbt_release_last(v);
        wbt_release_last(x);
        wbt_release_last(y);
        wb_wrapper_free(w);
        wb_spec_free(s);
    }
}

/* Two overlapping views of one storage, both data-mutated: the copies run
   in input order, as PyTorch's copy_ calls would, and the storage's one
   version counter counts both.  A second call whose graph then fails
   leaves the storage exactly as the first left it. */
Test(faults, overlapping_mutated_inputs)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("overlap", &s));
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_DATA, 0, NULL));
        wb_tensor *base = wbt_f32(0, 1, 6), *a, *b;
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){4}, NULL, 0, &a));
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){4}, NULL, 2, &b));
        wb_tensor *va = wbt_f32(100, 1, 4), *vb = wbt_f32(200, 1, 4);
        faults_graph g = {{va, vb}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg args[2] = {{.t = a}, {.t = b}};
        WBT_OK(wb_call(w, args, 2, NULL, 0));
        const float want[6] = {100, 101, 200, 201, 202, 203};
        const float *p = wb_tensor_data(base);
        for (int i = 0; i < 6; i++)
            cr_assert_eq(p[i], want[i], "%s: element %d is %g, expected %g",
                         wb_tier_name(tier), i, p[i], want[i]);
        cr_assert_eq(wb_tensor_version(base), 2);
        /* Now the graph hands back a value of the wrong size for b. */
        wb_tensor *bad = wbt_f32(300, 1, 3);
        g.vals[1] = bad;
        faults_snap before = faults_snap_of(base);
        WBT_FAILS(wb_call(w, args, 2, NULL, 0), WB_ERR_SHAPE, "input 1");
        faults_snap after = faults_snap_of(base);
        faults_assert_same(&before, &after, wb_tier_name(tier));
        cr_assert_eq(wb_tensor_refcount(va), 1);
        cr_assert_eq(wb_tensor_refcount(bad), 1);
        wb_wrapper_free(w);
        wb_tensor_release(a);
        wb_tensor_release(b);
        wbt_release_last(base);
        wbt_release_last(va);
        wbt_release_last(vb);
        wbt_release_last(bad);
        wb_spec_free(s);
    }
}

/* A view's base that the graph hands back as the caller's own input, while
   a set_ mutation gives that input a new storage: the view was checked
   against the storage the input had, so the call is refused before anything
   changes, with an intermediate base and with a user output as the base. */
Test(faults, view_base_is_an_input_that_set_replaces)
{
    WBT_EACH_TIER(tier) {
        for (int user = 0; user < 2; user++) {
            wb_spec *s;
            WBT_OK(wb_spec_new("set_base", &s));
            WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_STORAGE, 0, NULL));
            if (user) {
                WBT_OK(wb_spec_add_output(s, "o", WB_OUT_NON_ALIAS, -1, false,
                                          0, NULL));
                WBT_OK(wb_spec_add_output(
                    s, "v", WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT,
                    0, false, 0, NULL));
            } else {
                WBT_OK(wb_spec_set_intermediate_bases(s, 1));
                WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INTERMEDIATE,
                                          0, false, 0, NULL));
            }
            /* x's storage holds 8 floats, the new one 2; the view's value
               lies at 4 to 7 of x's. */
            wb_tensor *x = wbt_f32(0, 1, 8), *nb = wbt_f32(100, 1, 2), *v;
            WBT_OK(wb_tensor_as_strided(x, 1, (int64_t[]){4}, NULL, 4, &v));
            faults_graph g = {{nb, x, v}, 3};
            if (!user) {
                g.vals[1] = v;
                g.vals[2] = x;
            }
            wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
            wb_arg a[1] = {{.t = x}};
            wb_value o[2] = {{NULL}, {NULL}};
            faults_snap before = faults_snap_of(x);
            WBT_FAILS(wb_call(w, a, 1, o, 1 + user), WB_ERR_INVALID,
                      "storage mutation commits first and changes it");
            faults_snap after = faults_snap_of(x);
            faults_assert_same(&before, &after, wb_tier_name(tier));
            cr_assert_eq(wb_tensor_storage(x) != wb_tensor_storage(nb), true,
                         "x keeps its storage");
            cr_assert(!o[0].t && !o[1].t, "no output written");
            cr_assert_eq(wb_tensor_refcount(nb), 1);
            cr_assert_eq(wb_tensor_refcount(v), 1);
            wbt_release_last(v);
            wbt_release_last(nb);
            wbt_release_last(x);
            wb_wrapper_free(w);
            wb_spec_free(s);
        }
    }
}

/* Two set_ mutations in a chain: one input's set_ is handed the other
   input's own tensor, and an output is a view of the first.  When the other
   input's set_ commits first, the first input ends on the storage that set_
   brings, not the one its view was checked against: the call is refused
   before anything changes.  When it commits second, the first input keeps
   the storage it was handed and the view aliases it. */
Test(faults, view_holder_is_an_input_that_set_replaces_first)
{
    WBT_EACH_TIER(tier) {
        for (int first = 0; first < 2; first++) {
            /* the viewed input, whose set_ is handed the other's tensor */
            int vi = first ? 0 : 1, oi = 1 - vi;
            wb_spec *s;
            WBT_OK(wb_spec_new("set_chain", &s));
            WBT_OK(wb_spec_add_tensor(s, "x0", WB_MUT_STORAGE, 0, NULL));
            WBT_OK(wb_spec_add_tensor(s, "x1", WB_MUT_STORAGE, 0, NULL));
            WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, vi,
                                      false, 0, NULL));
            wb_tensor *x[2] = {wbt_f32(0, 1, 8), wbt_f32(10, 1, 8)};
            wb_tensor *nb = wbt_f32(100, 1, 2), *v;
            wb_storage *old = wb_tensor_storage(x[oi]);
            /* The view lies at 4 to 7 of the other input's storage. */
            WBT_OK(wb_tensor_as_strided(x[oi], 1, (int64_t[]){4}, NULL, 4,
                                        &v));
            faults_graph g = {{NULL, NULL, v}, 3};
            g.vals[vi] = x[oi];
            g.vals[oi] = nb;
            wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
            wb_arg a[2] = {{.t = x[0]}, {.t = x[1]}};
            wb_value o[1] = {{NULL}};
            faults_snap before[2] = {faults_snap_of(x[0]),
                                     faults_snap_of(x[1])};
            if (!first) {
                WBT_FAILS(wb_call(w, a, 2, o, 1), WB_ERR_INVALID,
                          "storage mutation commits first and changes it");
                faults_assert_unchanged(before, x, 2, wb_tier_name(tier));
                cr_assert_eq(wb_tensor_storage(x[oi]), old);
                cr_assert(!o[0].t, "no output written");
            } else {
                WBT_OK(wb_call(w, a, 2, o, 1));
                cr_assert_eq(wb_tensor_storage(x[vi]), old,
                             "%s: the viewed input took the other's storage",
                             wb_tier_name(tier));
                cr_assert_eq(wb_tensor_storage(x[oi]), wb_tensor_storage(nb));
                cr_assert_eq(wb_tensor_storage(o[0].t), old,
                             "%s: the view aliases its input",
                             wb_tier_name(tier));
                cr_assert_eq(wb_tensor_offset(o[0].t), 4);
                wbt_release_last(o[0].t);
            }
            cr_assert_eq(wb_tensor_refcount(nb), 1);
            cr_assert_eq(wb_tensor_refcount(v), 1);
            wb_wrapper_free(w);
            wbt_release_last(v);
            wbt_release_last(nb);
            wbt_release_last(x[0]);
            wbt_release_last(x[1]);
            wb_spec_free(s);
        }
    }
}

/* A set_ mutation of an input whose storage is fixed is refused in the
   check phase: the data mutation before it is not made, and every value
   goes back to the graph. */
Test(faults, set_mutation_of_a_fixed_input_is_refused)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("fixed_set", &s));
        WBT_OK(wb_spec_add_tensor(s, "x0", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "x1", WB_MUT_STORAGE, 0, NULL));
        wb_tensor *x[2] = {wbt_f32(0, 1, 4), wbt_f32(10, 1, 4)};
        wb_tensor *u[2] = {wbt_f32(100, 1, 4), wbt_f32(200, 1, 8)};
        wb_storage *old = wb_tensor_storage(x[1]);
        wb_tensor_fix_storage(x[1]);
        faults_graph g = {{u[0], u[1]}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[2] = {{.t = x[0]}, {.t = x[1]}};
        faults_snap before[2] = {faults_snap_of(x[0]), faults_snap_of(x[1])};
        WBT_FAILS(wb_call(w, a, 2, NULL, 0), WB_ERR_INVALID,
                  "input 1 'x1': its storage is fixed");
        for (int i = 0; i < 2; i++) {
            faults_snap after = faults_snap_of(x[i]);
            faults_assert_same(&before[i], &after, wb_tier_name(tier));
            wbt_release_last(u[i]);
        }
        cr_assert_eq(wb_tensor_storage(x[1]), old);
        cr_assert_eq(wb_storage_refcount(old), 1);
        wb_wrapper_free(w);
        wbt_release_last(x[0]);
        wbt_release_last(x[1]);
        wb_spec_free(s);
    }
}

/* A call that fails on its second view after preparing the first as a
   view that will keep a fixed value frees that header without releasing
   anything it does not hold: the value's one reference goes back with
   the values, on the first call (a header from the heap) and later ones
   (from the thread's cache). */
Test(faults, failed_call_after_a_view_of_a_fixed_value)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("fixed_fail", &s));
        WBT_OK(wb_spec_add_tensor(s, "x0", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "x1", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "v0", WB_OUT_ALIAS_OF_INPUT, 0, false,
                                  0, NULL));
        WBT_OK(wb_spec_add_output(s, "v1", WB_OUT_ALIAS_OF_INPUT, 1, false,
                                  0, NULL));
        wb_tensor *x[2] = {wbt_f32(0, 1, 4), wbt_f32(10, 1, 2)};
        wb_tensor *other = wbt_f32(100, 1, 8), *g0, *g1;
        WBT_OK(wb_tensor_as_strided(x[0], 1, (int64_t[]){2}, NULL, 2, &g0));
        /* Past the end of x1's two floats. */
        WBT_OK(wb_tensor_as_strided(other, 1, (int64_t[]){2}, NULL, 4, &g1));
        wb_tensor_fix_storage(g0);
        wb_tensor_fix_storage(g1);
        faults_graph g = {{g0, g1}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[2] = {{.t = x[0]}, {.t = x[1]}};
        wb_value o[2] = {{NULL}, {NULL}};
        for (int call = 0; call < 3; call++) {
            WBT_FAILS(wb_call(w, a, 2, o, 2), WB_ERR_SHAPE,
                      "does not fit its base's storage");
            cr_assert(!o[0].t && !o[1].t, "no output written");
            cr_assert_eq(wb_tensor_refcount(g0), 1);
            cr_assert_eq(wb_tensor_refcount(g1), 1);
            cr_assert_eq(wb_storage_refcount(wb_tensor_storage(x[0])), 2,
                         "%s, call %d: x0 and g0", wb_tier_name(tier), call);
        }
        wb_wrapper_free(w);
        wbt_release_last(g0);
        wbt_release_last(g1);
        wbt_release_last(other);
        wbt_release_last(x[0]);
        wbt_release_last(x[1]);
        wb_spec_free(s);
    }
}

/* Inputs two of whose elements are one: a copy into them would write some
   element twice.  PyTorch's copy_ refuses the expanded ones (stride 0) and
   lets the others through; here each is refused in the check phase, on
   the generic path and on the one for declared dims (where gcc and tcc run
   their own loops over runs of inputs), after a mutation that would have
   succeeded: nothing is written or bumped, and no reference is kept. */
typedef struct faults_layout {
    const char *what;
    int ndim;
    int64_t sizes[2], strides[2];
} faults_layout;

static const faults_layout faults_aliased[] = {
    {"expanded 1-d", 1, {4}, {0}},
    {"expanded row", 2, {3, 3}, {0, 1}},
    {"strides {1, 1}", 2, {3, 3}, {1, 1}},
};

Test(faults, data_mutation_of_an_input_whose_elements_overlap)
{
    WBT_EACH_TIER(tier) {
        for (int k = 0; k < 3; k++) {
            for (int declared = 0; declared < 2; declared++) {
                const faults_layout *l = &faults_aliased[k];
                wb_spec *s;
                WBT_OK(wb_spec_new("aliased_elements", &s));
                WBT_OK(wb_spec_add_tensor(s, "x0", WB_MUT_DATA, 0, NULL));
                WBT_OK(wb_spec_add_tensor(s, "x1", WB_MUT_DATA, 0, NULL));
                for (int i = 0; declared && i < 2; i++) {
                    WBT_OK(wb_spec_declare_input(s, i, WBT_F32, l->ndim));
                    WBT_OK(wb_spec_declare_device(s, i, WBT_CPU));
                }
                wb_tensor *x0 = NULL, *x1 = NULL, *u0 = NULL, *u1 = NULL;
                WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, l->ndim, l->sizes, &x0));
                WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, l->ndim, l->sizes, &u0));
                WBT_OK(wb_tensor_new(WBT_F32, WBT_CPU, l->ndim, l->sizes, &u1));
                wb_tensor *store = wbt_f32(10, 1, 5);
                WBT_OK(wb_tensor_as_strided(store, l->ndim, l->sizes,
                                            l->strides, 0, &x1));
                memset(wb_tensor_data(u0), 0x41, 4 * (size_t)wb_tensor_numel(u0));
                memset(wb_tensor_data(u1), 0x42, 4 * (size_t)wb_tensor_numel(u1));
                faults_graph g = {{u0, u1}, 2};
                wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
                wb_arg a[2] = {{.t = x0}, {.t = x1}};
                wbt_snap s0, s1;
                wbt_snap_take(&s0, x0, NULL);
                wbt_snap_take(&s1, x1, NULL);
                for (int call = 0; call < 2; call++) {
                    wb_status st = wb_call(w, a, 2, NULL, 0);
                    cr_assert_eq(st, WB_ERR_SHAPE, "%s, %s, declared %d: %s",
                                 wb_tier_name(tier), l->what, declared,
                                 wb_status_str(st));
                    cr_assert(strstr(wb_last_error(),
                                     "input 1 'x1': more than one element of "
                                     "the input refers to a single memory "
                                     "location"),
                              "%s, %s: %s", wb_tier_name(tier), l->what,
                              wb_last_error());
                }
                wbt_snap_check(&s0, 0, "x0");
                wbt_snap_check(&s1, 0, "x1");
                cr_assert_eq(wb_tensor_refcount(u0), 1);
                cr_assert_eq(wb_tensor_refcount(u1), 1);
                wb_wrapper_free(w);
                wbt_release_last(x1);
                wbt_release_last(store);
                wbt_release_last(x0);
                wbt_release_last(u0);
                wbt_release_last(u1);
                wb_spec_free(s);
            }
        }
    }
}

/* The even and the odd elements of one storage, both data-mutated: they
   share no byte, so both copies run, as PyTorch's would. */
Test(faults, data_mutations_of_interleaved_inputs)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("interleaved", &s));
        WBT_OK(wb_spec_add_tensor(s, "even", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "odd", WB_MUT_DATA, 0, NULL));
        for (int i = 0; i < 2; i++)
            WBT_OK(wb_spec_declare_input(s, i, WBT_F32, 1));
        wb_tensor *base = wbt_f32(0, 1, 8), *even, *odd;
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){4}, (int64_t[]){2},
                                    0, &even));
        WBT_OK(wb_tensor_as_strided(base, 1, (int64_t[]){4}, (int64_t[]){2},
                                    1, &odd));
        /* The graph hands back the odd elements as the even ones' value and
           the even ones as the odd ones': PyTorch copies in input order. */
        faults_graph g = {{odd, even}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[2] = {{.t = even}, {.t = odd}};
        WBT_OK(wb_call(w, a, 2, NULL, 0));
        for (int i = 0; i < 8; i++)
            cr_assert_eq(wbt_at(base, i), (float)(i | 1), "%s: element %d",
                         wb_tier_name(tier), i);
        cr_assert_eq(wb_tensor_refcount(even), 1);
        cr_assert_eq(wb_tensor_refcount(odd), 1);
        wb_wrapper_free(w);
        wbt_release_last(even);
        wbt_release_last(odd);
        wbt_release_last(base);
        wb_spec_free(s);
    }
}

/* A graph value that is an input whose metadata or set_ mutation commits
   before the value is read: the check saw it as it was, the commit would
   read it as it is after (another size, another storage).  The call is
   refused before anything changes.  Read before the mutation commits, the
   value is what it was, and the call runs as PyTorch's epilogue does. */
Test(faults, a_value_is_an_input_a_mutation_moves_first)
{
    static const wb_mutation moves[] = {WB_MUT_STORAGE, WB_MUT_METADATA};
    static const wb_mutation reads[] = {WB_MUT_DATA, WB_MUT_METADATA};
    WBT_EACH_TIER(tier) {
        for (int m = 0; m < 2; m++)
            for (int k = 0; k < 2; k++)
                for (int moved_first = 0; moved_first < 2; moved_first++) {
                    /* x moves (to one element), y reads x as its value. */
                    int xi = moved_first ? 0 : 1, yi = 1 - xi;
                    wb_spec *s;
                    WBT_OK(wb_spec_new("moved_value", &s));
                    for (int i = 0; i < 2; i++)
                        WBT_OK(wb_spec_add_tensor(
                            s, i == xi ? "x" : "y",
                            i == xi ? moves[m] : reads[k], 0, NULL));
                    wb_tensor *t[2] = {wbt_f32(0, 1, 4), wbt_f32(10, 1, 4)};
                    wb_tensor *x = t[xi], *y = t[yi], *nx;
                    if (moves[m] == WB_MUT_STORAGE)
                        nx = wbt_f32(100, 1, 1);
                    else
                        WBT_OK(wb_tensor_as_strided(x, 1, (int64_t[]){1},
                                                    NULL, 3, &nx));
                    faults_graph g = {{NULL, NULL}, 2};
                    g.vals[xi] = nx;
                    g.vals[yi] = x;
                    wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
                    wb_arg a[2] = {{.t = t[0]}, {.t = t[1]}};
                    faults_snap before[2] = {faults_snap_of(t[0]),
                                             faults_snap_of(t[1])};
                    wb_storage *xs = wb_tensor_storage(x);
                    if (moved_first) {
                        WBT_FAILS(wb_call(w, a, 2, NULL, 0), WB_ERR_INVALID,
                                  "mutation commits first and changes it");
                        faults_assert_unchanged(before, t, 2,
                                                wb_tier_name(tier));
                        cr_assert_eq(wb_tensor_numel(x), 4);
                        cr_assert_eq(wb_tensor_storage(x), xs);
                    } else {
                        WBT_OK(wb_call(w, a, 2, NULL, 0));
                        /* y took x as it was: four elements of x's. */
                        cr_assert_eq(wb_tensor_numel(y), 4, "%s",
                                     wb_tier_name(tier));
                        if (reads[k] == WB_MUT_DATA)
                            cr_assert_eq(((float *)wb_tensor_data(y))[3],
                                         xi * 10.0f + 3);
                        cr_assert_eq(wb_tensor_numel(x), 1);
                    }
                    wb_wrapper_free(w);
                    wbt_release_last(nx);
                    wbt_release_last(t[1]);
                    wbt_release_last(t[0]);
                    wb_spec_free(s);
                }
    }
}

/* The refusal names the value as the graph counts it: after its effect
   tokens, y's value is value 3. */
Test(faults, a_moved_value_is_named_counting_the_effect_tokens)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("moved_after_tokens", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, 0, NULL));
        WBT_OK(wb_spec_set_effect_tokens(s, 2));
        wb_tensor *x = wbt_f32(0, 1, 4), *y = wbt_f32(10, 1, 4), *nx;
        WBT_OK(wb_tensor_as_strided(x, 1, (int64_t[]){1}, NULL, 3, &nx));
        faults_graph g = {{NULL, NULL, nx, x}, 4};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[2] = {{.t = x}, {.t = y}};
        WBT_FAILS(wb_call(w, a, 2, NULL, 0), WB_ERR_INVALID,
                  "input 1 'y': its value 3 is input 0 'x', whose metadata "
                  "mutation commits first");
        cr_assert_eq(wb_tensor_numel(x), 4);
        cr_assert_eq(wb_tensor_version(y), 0);
        wb_wrapper_free(w);
        wbt_release_last(nx);
        wbt_release_last(y);
        wbt_release_last(x);
        wb_spec_free(s);
    }
}

/* The same for a view's value: an output that aliases an input, whose
   value is that input, which its metadata mutation moves first. */
Test(faults, a_view_of_an_input_a_mutation_moves_first)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("moved_view", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_output(s, "v", WB_OUT_ALIAS_OF_INPUT, 0, false, 0,
                                  NULL));
        wb_tensor *x = wbt_f32(0, 1, 4), *nx;
        WBT_OK(wb_tensor_as_strided(x, 1, (int64_t[]){2}, NULL, 2, &nx));
        faults_graph g = {{nx, x}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[1] = {{.t = x}};
        wb_value o[1] = {{NULL}};
        faults_snap before = faults_snap_of(x);
        WBT_FAILS(wb_call(w, a, 1, o, 1), WB_ERR_INVALID,
                  "metadata mutation commits first and changes it");
        faults_snap after = faults_snap_of(x);
        faults_assert_same(&before, &after, wb_tier_name(tier));
        cr_assert_eq(wb_tensor_numel(x), 4);
        cr_assert(!o[0].t, "no output written");
        wb_wrapper_free(w);
        wbt_release_last(nx);
        wbt_release_last(x);
        wb_spec_free(s);
    }
}

/* Members of synthetic bases take their new views last, one after
   another: member b's new view may not be member a's tensor, which a's
   new view has moved by then (to 16 elements, where b's storage holds 2). */
Test(faults, a_members_view_is_a_member_moved_first)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("moved_member", &s));
        WBT_OK(wb_spec_add_tensor(s, "a", WB_MUT_DATA_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "a2", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b", WB_MUT_DATA_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "b2", WB_MUT_NONE, 0, NULL));
        WBT_OK(wb_spec_set_synthetic_base(s, 1, 0));
        WBT_OK(wb_spec_set_synthetic_base(s, 3, 2));
        wb_storage *sa, *sb;
        WBT_OK(wb_storage_new(WBT_CPU, 64, &sa));
        WBT_OK(wb_storage_new(WBT_CPU, 8, &sb));
        wb_tensor *x[4], *ua = wbt_f32(1, 1, 16), *ub = wbt_f32(2, 1, 2), *na;
        WBT_OK(wb_tensor_from_storage(sa, WBT_F32, 1, (int64_t[]){2}, NULL, 0,
                                      &x[0]));
        WBT_OK(wb_tensor_from_storage(sa, WBT_F32, 1, (int64_t[]){2}, NULL, 2,
                                      &x[1]));
        WBT_OK(wb_tensor_from_storage(sb, WBT_F32, 1, (int64_t[]){1}, NULL, 0,
                                      &x[2]));
        WBT_OK(wb_tensor_from_storage(sb, WBT_F32, 1, (int64_t[]){1}, NULL, 1,
                                      &x[3]));
        WBT_OK(wb_tensor_as_strided(x[0], 1, (int64_t[]){16}, NULL, 0, &na));
        /* The bases' values, then a's new view, then b's: a as it was. */
        faults_graph g = {{ua, ub, na, x[0]}, 4};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg args[4] = {{.t = x[0]}, {.t = x[1]}, {.t = x[2]}, {.t = x[3]}};
        faults_snap before[4];
        for (int i = 0; i < 4; i++)
            before[i] = faults_snap_of(x[i]);
        WBT_FAILS(wb_call(w, args, 4, NULL, 0), WB_ERR_INVALID,
                  "input 2 'b': its value 3 is input 0 'a', whose "
                  "data+metadata mutation commits first and changes it");
        faults_assert_unchanged(before, x, 4, wb_tier_name(tier));
        cr_assert_eq(wb_tensor_numel(x[2]), 1);
        wb_wrapper_free(w);
        wbt_release_last(na);
        wbt_release_last(ub);
        wbt_release_last(ua);
        for (int i = 3; i >= 0; i--)
            wb_tensor_release(x[i]);
        wb_storage_release(sb);
        wb_storage_release(sa);
        wb_spec_free(s);
    }
}

/* A metadata mutation handed a tensor with its input's very view (another
   object on the same storage) moves nothing: a later read of the input is
   as the check saw it, and the call runs. */
Test(faults, a_mutation_to_the_same_view_moves_nothing)
{
    WBT_EACH_TIER(tier) {
        wb_spec *s;
        WBT_OK(wb_spec_new("unmoved", &s));
        WBT_OK(wb_spec_add_tensor(s, "x", WB_MUT_METADATA, 0, NULL));
        WBT_OK(wb_spec_add_tensor(s, "y", WB_MUT_DATA, 0, NULL));
        wb_tensor *x = wbt_f32(0, 1, 4), *y = wbt_f32(10, 1, 4), *same;
        WBT_OK(wb_tensor_as_strided(x, 1, (int64_t[]){4}, NULL, 0, &same));
        faults_graph g = {{same, x}, 2};
        wb_wrapper *w = wbt_wrap(s, faults_fn, &g, tier);
        wb_arg a[2] = {{.t = x}, {.t = y}};
        WBT_OK(wb_call(w, a, 2, NULL, 0));
        cr_assert_eq(((float *)wb_tensor_data(y))[3], 3.0f, "%s",
                     wb_tier_name(tier));
        wb_wrapper_free(w);
        wbt_release_last(same);
        wbt_release_last(y);
        wbt_release_last(x);
        wb_spec_free(s);
    }
}
