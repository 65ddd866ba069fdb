/* The leading members of a tensor; the rest is the runtime's. */
typedef struct wb_storage wb_storage;
typedef struct wb_tensor {
    long refcount;
    wb_storage *storage;
    /* DLDataType, then ndim << 32, then the device's type << 48
       and id << 56 */
    unsigned long long meta;
} wb_tensor;
typedef union wb_value { wb_tensor *t; long long i; double f; _Bool b; const void *p; } wb_value;
typedef wb_value wb_arg;
typedef struct wb_env wb_env;
typedef struct wb_rt_grow wb_rt_grow;

int wb_rt_err_arity(const wb_env *e, int nargs, int nouts);
int wb_rt_err_values(const wb_env *e, int n, const wb_value *r);
int wb_rt_err_inputs(const wb_env *e, const wb_arg *args);
int wb_rt_args_bad_masked(const wb_arg *a, unsigned n,
                          unsigned long long mask, unsigned long long want);
int wb_rt_call_nograd(const wb_env *e, const wb_arg *a, int nargs,
                      wb_value *r, int nvalues);
int wb_rt_prep_data_2d_run(const wb_env *e, int input, const wb_arg *a,
                           const wb_value *r, int n);
void wb_rt_commit_data_2d_run(const wb_arg *a, const wb_value *r, int n);
int wb_rt_prep_views(const wb_env *e, int output, const wb_arg *a,
                     const wb_value *r, wb_tensor **views, int n);
void wb_rt_commit_views_plain(wb_value *outs, wb_tensor *const *views,
                              const wb_value *r, int n);
wb_tensor *wb_rt_out_plain(wb_tensor *t);
int wb_rt_flush(const wb_env *e, wb_value *outs, int nouts);
void wb_rt_release_all(wb_tensor **v, int n);
void wb_rt_release_values(wb_value *r, int n);
void wb_rt_drop_copies(const wb_env *e);

int wb_generated(const wb_env *e, const wb_arg *a, int nargs,
        wb_value *outs, int nouts)
{
    wb_value r[9]; /* the graph's values */
    wb_tensor *v[5]; /* views for aliased outputs */
    int n, st;

    r[0].t = r[1].t = r[2].t = r[3].t = r[4].t = r[5].t = r[6].t = r[7].t =
        r[8].t = 0;
    v[0] = v[1] = v[2] = v[3] = v[4] = 0;
#line 1 "case_E"
    if (nargs != 20 || nouts < 6)
        return wb_rt_err_arity(e, nargs, nouts);
    if (wb_rt_args_bad_masked(a, 20, 0xffffffffffffull, 0x200012002ull))
        return wb_rt_err_inputs(e, a);

#line 1
    if ((n = wb_rt_call_nograd(e, a, 20, r, 9)) != 9 || !r[0].t || !r[1].t ||
        !r[2].t || !r[3].t || !r[4].t || !r[5].t || !r[6].t || !r[7].t ||
        !r[8].t) {
        st = wb_rt_err_values(e, n, r);
        goto fail;
    }
#line 2
    if ((st = wb_rt_prep_data_2d_run(e, 0, a, r, 3)) != 0)
        goto fail;
#line 22
    if ((st = wb_rt_prep_views(e, 0, a + 3, r + 3, v, 5)) != 0)
        goto fail;

#line 2
    wb_rt_commit_data_2d_run(a, r, 3);
#line 22
    wb_rt_commit_views_plain(outs, v, r + 3, 5);
#line 27
    outs[5].t = wb_rt_out_plain(r[8].t);
#line 1
    return wb_rt_flush(e, outs, 6);

fail:
    wb_rt_drop_copies(e); /* the device copies checked */
    wb_rt_release_values(r, 9);
    wb_rt_release_all(v, 5);
    return st;
}
