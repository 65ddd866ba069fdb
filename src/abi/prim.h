/*
 * prim.h -- static inline primitives shared by more than one file of the
 * abi layer (internal): kept inline, as in the one file they came from,
 * so that splitting by concern costs no call on a hot path.
 */
#ifndef WB_ABI_PRIM_H
#define WB_ABI_PRIM_H

#include "../core/core.h"

/* Whether v's view fits in nbytes: -1 if it does, else where it ends.  A
   tensor's own metadata was checked when it was made (strides not negative,
   count and extent without overflow), so its extent is all that is left to
   check against another storage. */
static inline int64_t wb_rt_fits(const wb_tensor *v, size_t nbytes)
{
    int64_t end = wb_rt_view_end(v->dtype, v->ndim, v->sizes, v->strides,
                                 v->offset);
    return end >= 0 && (uint64_t)end <= nbytes ? -1 : end < 0 ? INT64_MAX
                                                                : end;
}

#endif /* WB_ABI_PRIM_H */
