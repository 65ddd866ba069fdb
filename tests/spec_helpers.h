/*
 * spec_helpers.h -- assertions on the spec IR, for the tests that look
 * inside it (they include src/spec/spec.h).
 */
#ifndef WB_TEST_SPEC_HELPERS_H
#define WB_TEST_SPEC_HELPERS_H

#include "helpers.h"
#include "../src/spec/spec.h"

/* The two specs' items and graph-level settings hold the same values. */
static inline void wbt_assert_same_items(const wb_spec *a, const wb_spec *b)
{
    cr_assert_str_eq(a->name, b->name);
    cr_assert_eq(a->ninputs, b->ninputs);
    for (int i = 0; i < a->ninputs; i++) {
        const wb_input *x = &a->inputs[i], *y = &b->inputs[i];
        cr_assert_str_eq(x->name, y->name, "input %d", i);
        cr_assert_eq(x->is_tensor, y->is_tensor, "input %d", i);
        cr_assert_eq(x->scalar, y->scalar, "input %d", i);
        cr_assert_eq(x->mutation, y->mutation, "input %d", i);
        cr_assert_eq(x->flags, y->flags, "input %d", i);
        cr_assert_eq(x->dtype.code, y->dtype.code, "input %d", i);
        cr_assert_eq(x->dtype.bits, y->dtype.bits, "input %d", i);
        cr_assert_eq(x->dtype.lanes, y->dtype.lanes, "input %d", i);
        cr_assert_eq(x->ndim, y->ndim, "input %d", i);
    }
    cr_assert_eq(a->noutputs, b->noutputs);
    for (int k = 0; k < a->noutputs; k++) {
        const wb_output *x = &a->outputs[k], *y = &b->outputs[k];
        cr_assert_str_eq(x->name, y->name, "output %d", k);
        cr_assert_eq(x->scalar, y->scalar, "output %d", k);
        cr_assert_eq(x->kind, y->kind, "output %d", k);
        cr_assert_eq(x->base, y->base, "output %d", k);
        cr_assert_eq(x->requires_grad, y->requires_grad, "output %d", k);
        cr_assert_eq(x->dyn, y->dyn, "output %d", k);
    }
    cr_assert_eq(a->nbases, b->nbases);
    cr_assert_eq(a->training, b->training);
    cr_assert_eq(a->keep_input_mutations, b->keep_input_mutations);
    cr_assert_eq(a->grad_at_end, b->grad_at_end);
}

#endif /* WB_TEST_SPEC_HELPERS_H */
