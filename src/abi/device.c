/*
 * device.c -- the helpers a call's CUDA write-back goes through: the spec's
 * words around what src/core/cuda.c decides.
 */
#include <stdio.h>

#include "abi.h"
#include "../spec/spec.h"

/* The call e runs: its frame, or e where a caller ran the code without
   wb_call. */
static const void *wb_rt_call_of(const wb_env *e)
{
    return wb_rt_calls ? wb_rt_calls : (const void *)e;
}

wb_status wb_rt_prep_device_copy(const wb_env *e, int input,
                                 const wb_tensor *t, const wb_tensor *v)
{
    char lb[400];
    int device;
    void *stream;
    switch (wb_rt_device_copy_fits(wb_rt_call_of(e), e->stream, t, v,
                                   &device, &stream)) {
    case WB_RT_COPY_FITS:
        return WB_OK;
    case WB_RT_COPY_OTHER_DEVICE:
        return wb_rt_callf(e, WB_ERR_DEVICE, "%s is on cuda:%d and an "
                           "earlier mutated input on cuda:%d; a call writes "
                           "back on one device",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           t->storage->device.device_id, device);
    case WB_RT_COPY_OTHER_STREAM:
        return wb_rt_callf(e, WB_ERR_DEVICE, "%s is tied to stream %p; this "
                           "call runs on stream %p",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           t->storage->stream, stream);
    case WB_RT_COPY_TOO_MANY_DIMS:
        return wb_rt_callf(e, WB_ERR_UNSUPPORTED, "%s: a CUDA copy of views "
                           "with more than %d dimensions that do not merge",
                           wb_rt_input_label(e, input, lb, sizeof lb),
                           wb_rt_device_copy_dims());
    case WB_RT_COPY_INSIDE_A_CALL:
        return wb_rt_callf(e, WB_ERR_INVALID, "%s: this call writes back "
                           "on a CUDA device inside another call that does "
                           "on this thread (a deleter of that call's "
                           "values called it)",
                           wb_rt_input_label(e, input, lb, sizeof lb));
    case WB_RT_COPY_NO_CUDA:
        break;
    }
    return WB_ERR_DEVICE;  /* wb_rt_device_check set the message */
}

void wb_rt_drop_copies(const wb_env *e)
{
    wb_rt_device_drop(wb_rt_call_of(e));
}

int wb_rt_flush(const wb_env *e, wb_value *outs, int nouts)
{
    wb_status st = wb_rt_device_flush(wb_rt_call_of(e));
    if (st != WB_OK) {
        /* The message names the spec, as every call's does. */
        char why[600];
        snprintf(why, sizeof why, "%s", wb_last_error());
        st = wb_rt_callf(e, st, "the write-back: %s", why);
    }
    if (st != WB_OK)
        for (int k = 0; k < nouts; k++) {
            if (e->spec->outs[k].scalar)
                continue;
            wb_tensor_release(outs[k].t);
            outs[k].t = NULL;
        }
    return st;
}
