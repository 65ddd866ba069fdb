/*
 * cuda.c -- storages on CUDA devices and the batched write-back of data
 * mutations.
 *
 * A call does not copy its data mutations of CUDA inputs one by one.  The
 * check phase checks each copy (wb_rt_device_copy_fits: one device, the
 * call's stream, a layout the kernel takes), the commit phase records it
 * (wb_rt_defer_copy), and the end of the call enqueues them all at once on
 * the call's stream (wb_rt_device_flush): one cudaMemcpyBatchAsync when
 * every copy is contiguous and the stream is not the legacy default stream
 * (which that call refuses), otherwise one launch of the gather-copy kernel
 * (cuda_copy.cu) per WB_CUDA_BATCH copies, strided views included.  A copy
 * that touches memory an earlier copy of the batch touches waits for the
 * next submission, so the copies keep their order.  So a call makes one
 * submission per WB_RT_PENDING (32) mutated inputs on its own stream, or
 * one per WB_CUDA_BATCH (8) on the legacy one.
 *
 * The CUDA runtime is not linked: the first use of a CUDA device loads it
 * (libcudart.so.MAJOR of the toolkit the library was built with, or the
 * file $WRAPBAKE_CUDART names, when trust.c trusts it), so programs link
 * nothing more and run where CUDA is absent.  Built without CUDA
 * (WB_WITH_CUDA unset), only CPU storages exist and the functions below
 * say so.  What a call's helpers
 * make of these, with the spec's words in the messages, is src/abi/device.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

static _Thread_local struct {
    bool set;
    void *stream;
} wb_rt_call_stream;

static _Thread_local uint64_t wb_rt_launches;

_Thread_local void *wb_rt_calls;

void wb_set_call_stream(void *stream)
{
    wb_rt_call_stream.set = true;
    wb_rt_call_stream.stream = stream;
}

void wb_clear_call_stream(void)
{
    wb_rt_call_stream.set = false;
    wb_rt_call_stream.stream = NULL;
}

uint64_t wb_cuda_launches(void) { return wb_rt_launches; }

#ifdef WB_WITH_CUDA

#include <dlfcn.h>
#include <sys/stat.h>
#include <limits.h>
#include <pthread.h>
#include <cuda_runtime_api.h>

#include "cuda_copy.h"

/* ---- the CUDA runtime, loaded on first use ---- */

#define WB_CUDA_FUNCTIONS(X)                                                \
    X(cudaGetDeviceCount) X(cudaGetDevice) X(cudaSetDevice)                 \
    X(cudaGetErrorString) X(cudaGetLastError) X(cudaMalloc) X(cudaFree)     \
    X(cudaMemset) X(cudaStreamSynchronize) X(cudaMemcpyBatchAsync)          \
    X(cudaLibraryLoadData) X(cudaLibraryGetKernel) X(cudaLibraryUnload)     \
    X(cudaLaunchKernel) X(cudaRuntimeGetVersion)

static struct {
    pthread_once_t once;
    void *lib;
    char why[900];     /* why it could not be loaded */
#define WB_CUDA_POINTER(f) __typeof__(f) *f;
    WB_CUDA_FUNCTIONS(WB_CUDA_POINTER)
#undef WB_CUDA_POINTER
} wb_cu = {.once = PTHREAD_ONCE_INIT};

#define WB_CUDART_MAJOR 13
#define WB_CUDA_STR2(x) #x
#define WB_CUDA_STR(x) WB_CUDA_STR2(x)
#define WB_CUDART "libcudart.so." WB_CUDA_STR(WB_CUDART_MAJOR)
_Static_assert(CUDART_VERSION / 1000 == WB_CUDART_MAJOR,
               "WB_CUDART_MAJOR names the runtime of the headers");

/* Whether the file at path (named by whom) may be loaded, with the rules
   the disk cache keeps for what it loads (wb_rt_unsafe_file): loading runs
   its constructors in this process.  Its resolved path goes to real; why
   it may not, to wb_cu.why. */
static bool wb_cu_trusted(const char *path, const char *whom,
                          char real[PATH_MAX])
{
    char why[600], shown[200];
    if (!wb_rt_unsafe_file(path, real, why, sizeof why))
        return true;
    snprintf(wb_cu.why, sizeof wb_cu.why, "cannot load the CUDA runtime "
             "%s (%s): %s", whom, wb_rt_printable(path, shown, sizeof shown),
             why);
    return false;
}

/* The runtime: the file $WRAPBAKE_CUDART names; else the loader's
   search; else the toolkit's own copy, where the library was built. */
static void wb_cu_load(void)
{
    const char *path = wb_rt_getenv("WRAPBAKE_CUDART");
    char real[PATH_MAX];
    if (path && *path && !wb_cu_trusted(path, "WRAPBAKE_CUDART names", real))
        return;
    wb_rt_inside_dependency++;
    struct stat sb;
    if (path && *path) {
        wb_cu.lib = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    } else if (!(wb_cu.lib = dlopen(WB_CUDART, RTLD_NOW | RTLD_LOCAL)) &&
               lstat(WB_CUDA_LIBDIR "/" WB_CUDART, &sb) == 0) {
        if (!wb_cu_trusted(WB_CUDA_LIBDIR "/" WB_CUDART, "of the toolkit",
                           real)) {
            wb_rt_inside_dependency--;
            return;
        }
        wb_cu.lib = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    }
    if (!wb_cu.lib) {
        /* The path and the loader's words come from the environment and
           the file: shown printable. */
        const char *e = dlerror();
        char shown[600];
        snprintf(wb_cu.why, sizeof wb_cu.why, "cannot load the CUDA runtime: "
                 "%s", wb_rt_printable(e ? e : (path && *path ? path
                                                             : WB_CUDART),
                                       shown, sizeof shown));
        wb_rt_inside_dependency--;
        return;
    }
#define WB_CUDA_RESOLVE(f)                                                  \
    if (!wb_cu.why[0] && !(*(void **)&wb_cu.f = dlsym(wb_cu.lib, #f)))      \
        snprintf(wb_cu.why, sizeof wb_cu.why, "the CUDA runtime has no %s "  \
                 "(wrapbake needs CUDA %d)", #f, WB_CUDART_MAJOR);
    WB_CUDA_FUNCTIONS(WB_CUDA_RESOLVE)
#undef WB_CUDA_RESOLVE
    /* Another major version names the same functions with other
       arguments (CUDA 12's cudaMemcpyBatchAsync takes one more). */
    int version = 0;
    if (!wb_cu.why[0] &&
        (wb_cu.cudaRuntimeGetVersion(&version) != cudaSuccess ||
         version / 1000 != WB_CUDART_MAJOR))
        snprintf(wb_cu.why, sizeof wb_cu.why, "the CUDA runtime is version "
                 "%d.%d; wrapbake needs CUDA %d", version / 1000,
                 version % 1000 / 10, WB_CUDART_MAJOR);
    /* A runtime that cannot serve goes, rather than stay mapped unused. */
    if (wb_cu.why[0]) {
        dlclose(wb_cu.lib);
        wb_cu.lib = NULL;
    }
    wb_rt_inside_dependency--;
}

void *wb_rt_cuda_symbol(const char *name)
{
    pthread_once(&wb_cu.once, wb_cu_load);
    return wb_cu.lib && !wb_cu.why[0] ? dlsym(wb_cu.lib, name) : NULL;
}

/* The stream a call enqueues on: the thread's, else the wrapper's (NULL:
   a copy outside any call). */
static void *wb_rt_stream_of(void *stream)
{
    return wb_rt_call_stream.set ? wb_rt_call_stream.stream : stream;
}

/* The kernel's fatbin, built by nvcc from cuda_copy.cu (see Makefile). */
__asm__(".section .rodata\n"
        ".balign 64\n"
        "wb_cuda_fatbin:\n"
        ".incbin \"" WB_CUDA_FATBIN "\"\n"
        ".byte 0\n"
        ".previous\n");
extern const char wb_cuda_fatbin[];

/* ---- devices ---- */

static struct {
    pthread_once_t once;
    int count;
    cudaError_t err;
} wb_rt_cuda_probe = {PTHREAD_ONCE_INIT, 0, cudaSuccess};

static void wb_rt_cuda_probe_once(void)
{
    if (!wb_rt_cuda_symbol("cudaGetDeviceCount")) {
        wb_rt_cuda_probe.err = cudaErrorInsufficientDriver;
        return;
    }
    wb_rt_cuda_probe.err = wb_cu.cudaGetDeviceCount(&wb_rt_cuda_probe.count);
    if (wb_rt_cuda_probe.err != cudaSuccess)
        wb_rt_cuda_probe.count = 0;
    else if (wb_rt_cuda_probe.count == 0)
        wb_rt_cuda_probe.err = cudaErrorNoDevice;
    (void)wb_cu.cudaGetLastError();
}

wb_status wb_cuda_devices(int *count)
{
    pthread_once(&wb_rt_cuda_probe.once, wb_rt_cuda_probe_once);
    if (!wb_cu.lib || wb_cu.why[0])
        return wb_rt_fail(WB_ERR_DEVICE, "no CUDA device: %s", wb_cu.why);
    if (wb_rt_cuda_probe.err != cudaSuccess)
        return wb_rt_fail(WB_ERR_DEVICE, "no CUDA device: %s",
                          wb_cu.cudaGetErrorString(wb_rt_cuda_probe.err));
    if (count)
        *count = wb_rt_cuda_probe.count;
    return WB_OK;
}

wb_status wb_rt_device_check(DLDevice device)
{
    int count;
    wb_status st;
    if (device.device_type == kDLCPU)
        return WB_OK;
    if (device.device_type != kDLCUDA)
        return wb_rt_fail(WB_ERR_DEVICE, "device type %d is not supported "
                          "(only kDLCPU and kDLCUDA)",
                          (int)device.device_type);
    if ((st = wb_cuda_devices(&count)) != WB_OK)
        return st;
    if (device.device_id < 0 || device.device_id >= count)
        return wb_rt_fail(WB_ERR_DEVICE, "CUDA device %d does not exist "
                          "(%d present)", device.device_id, count);
    return WB_OK;
}

/* Makes dev current; the device that was, to give back to wb_rt_leave. */
static int wb_rt_enter(int dev)
{
    int prev = dev;
    if (wb_cu.cudaGetDevice(&prev) != cudaSuccess || prev != dev)
        wb_cu.cudaSetDevice(dev);
    return prev;
}

static void wb_rt_leave(int dev, int prev)
{
    if (prev != dev)
        wb_cu.cudaSetDevice(prev);
}

static wb_status wb_rt_cuda_fail(wb_status st, const char *what,
                                 cudaError_t err)
{
    (void)wb_cu.cudaGetLastError();
    return wb_rt_fail(st, "%s: %s", what, wb_cu.cudaGetErrorString(err));
}

static void wb_rt_device_free(void *ctx, void *data)
{
    int dev = (int)(intptr_t)ctx, prev = wb_rt_enter(dev);
    wb_cu.cudaFree(data);
    wb_rt_leave(dev, prev);
}

wb_status wb_rt_device_alloc(DLDevice device, size_t nbytes, void **data,
                             wb_deleter *deleter, void **deleter_ctx)
{
    int dev = device.device_id, prev = wb_rt_enter(dev);
    void *p = NULL;
    cudaError_t err = wb_cu.cudaMalloc(&p, nbytes ? nbytes : 1);
    /* cudaMemset runs on the legacy stream, which streams created
       non-blocking do not wait for: the block is zero before it is
       handed out. */
    if (err == cudaSuccess &&
        ((err = wb_cu.cudaMemset(p, 0, nbytes)) != cudaSuccess ||
         (err = wb_cu.cudaStreamSynchronize(cudaStreamLegacy)) !=
             cudaSuccess))
        wb_cu.cudaFree(p);
    wb_rt_leave(dev, prev);
    if (err != cudaSuccess)
        return wb_rt_cuda_fail(err == cudaErrorMemoryAllocation
                                   ? WB_ERR_NOMEM : WB_ERR_DEVICE,
                               "cannot allocate CUDA memory", err);
    *data = p;
    *deleter = wb_rt_device_free;
    *deleter_ctx = (void *)(intptr_t)dev;
    return WB_OK;
}

/* ---- the pending write-back of this thread's call ---- */

#define WB_RT_PENDING 32

typedef struct wb_rt_pending {
    const void *call;    /* the call whose copies are checked, or NULL */
    void *stream;        /* the call's stream and device */
    int device;
    int n;               /* copies recorded */
    wb_status st;        /* of a submission made when the batch filled up */
    wb_cuda_copy c[WB_RT_PENDING];
    wb_storage *hold[WB_RT_PENDING];  /* the sources, alive until enqueued */
} wb_rt_pending;

static _Thread_local wb_rt_pending wb_rt_pend;

/* Merges the dims of dst and src (same sizes) where both are dense across
   them; false when more than WB_CUDA_ND remain.  A copy of no element is
   one of numel 0, whatever its sizes (which may then be huge). */
static bool wb_rt_describe(wb_cuda_copy *c, const wb_tensor *dst,
                           const wb_tensor *src)
{
    size_t es = wb_rt_esize(dst->dtype);
    int n = 0;
    c->numel = 1;
    for (int d = 0; d < dst->ndim; d++)
        if (dst->sizes[d] == 0)
            c->numel = 0;
    if (c->numel == 0) {
        c->ndim = 1;
        c->sizes[0] = 0;
        c->dstrides[0] = c->sstrides[0] = 1;
        c->esize = (int32_t)es;
        c->dst = NULL;
        c->src = NULL;
        return true;
    }
    for (int d = 0; d < dst->ndim; d++) {
        int64_t size = dst->sizes[d];
        c->numel *= size;
        if (size == 1)
            continue;
        if (n > 0 && c->dstrides[n - 1] == dst->strides[d] * size &&
            c->sstrides[n - 1] == src->strides[d] * size) {
            c->sizes[n - 1] *= size;
            c->dstrides[n - 1] = dst->strides[d];
            c->sstrides[n - 1] = src->strides[d];
            continue;
        }
        if (n == WB_CUDA_ND)
            return false;
        c->sizes[n] = size;
        c->dstrides[n] = dst->strides[d];
        c->sstrides[n] = src->strides[d];
        n++;
    }
    if (n == 0) {
        c->sizes[0] = 1;
        c->dstrides[0] = c->sstrides[0] = 1;
        n = 1;
    }
    c->ndim = n;
    c->esize = (int32_t)es;
    c->dst = (char *)dst->storage->data + dst->offset * (int64_t)es;
    c->src = (const char *)src->storage->data + src->offset * (int64_t)es;
    return true;
}

static bool wb_rt_dense(const wb_cuda_copy *c)
{
    return c->ndim == 1 && c->dstrides[0] == 1 && c->sstrides[0] == 1;
}

/* The bytes [*lo, *hi) a side of c touches. */
static void wb_rt_span(const wb_cuda_copy *c, bool dst, uintptr_t *lo,
                       uintptr_t *hi)
{
    int64_t last = 0;
    for (int k = 0; k < c->ndim; k++)
        last += (c->sizes[k] - 1) * (dst ? c->dstrides[k] : c->sstrides[k]);
    *lo = (uintptr_t)(dst ? c->dst : c->src);
    *hi = *lo + (uintptr_t)((last + 1) * c->esize);
}

static bool wb_rt_meet(const wb_cuda_copy *a, bool ad, const wb_cuda_copy *b,
                       bool bd)
{
    uintptr_t alo, ahi, blo, bhi;
    wb_rt_span(a, ad, &alo, &ahi);
    wb_rt_span(b, bd, &blo, &bhi);
    return alo < bhi && blo < ahi;
}

/* Whether copy j must wait for copy i: one writes what the other touches. */
static bool wb_rt_conflict(const wb_cuda_copy *i, const wb_cuda_copy *j)
{
    return wb_rt_meet(i, true, j, true) || wb_rt_meet(i, true, j, false) ||
           wb_rt_meet(i, false, j, true);
}

/* The copy kernel, loaded at its first use; a load that fails is tried
   again by the next launch, so that one transient failure (out of memory,
   say) does not leave the process without it. */
static struct {
    pthread_mutex_t lock;
    _Atomic(cudaKernel_t) kernel;  /* NULL until loaded */
    _Atomic bool no_batch_api;     /* cudaMemcpyBatchAsync refused once */
} wb_rt_kernel = {PTHREAD_MUTEX_INITIALIZER, NULL, false};

static cudaError_t wb_rt_kernel_get(cudaKernel_t *kernel)
{
    cudaError_t err = cudaSuccess;
    *kernel = atomic_load_explicit(&wb_rt_kernel.kernel,
                                   memory_order_acquire);
    if (*kernel)
        return cudaSuccess;
    pthread_mutex_lock(&wb_rt_kernel.lock);
    if (!(*kernel = atomic_load_explicit(&wb_rt_kernel.kernel,
                                         memory_order_relaxed))) {
        cudaLibrary_t lib;
        err = wb_cu.cudaLibraryLoadData(&lib, wb_cuda_fatbin, NULL, NULL, 0,
                                        NULL, NULL, 0);
        if (err == cudaSuccess &&
            (err = wb_cu.cudaLibraryGetKernel(kernel, lib,
                                              "wb_cuda_copy_kernel")) !=
                cudaSuccess)
            (void)wb_cu.cudaLibraryUnload(lib);  /* the next launch loads
                                                     it again */
        if (err == cudaSuccess)
            atomic_store_explicit(&wb_rt_kernel.kernel, *kernel,
                                  memory_order_release);
        (void)wb_cu.cudaGetLastError();
    }
    pthread_mutex_unlock(&wb_rt_kernel.lock);
    return err;
}

static wb_status wb_rt_launch(const wb_cuda_copy *c, int n, void *stream)
{
    cudaKernel_t kernel;
    cudaError_t err = wb_rt_kernel_get(&kernel);
    if (err != cudaSuccess)
        return wb_rt_cuda_fail(WB_ERR_DEVICE, "cannot load the copy kernel",
                               err);
    for (int i = 0; i < n; i += WB_CUDA_BATCH) {
        wb_cuda_batch b;
        int64_t most = 1;
        b.n = n - i < WB_CUDA_BATCH ? n - i : WB_CUDA_BATCH;
        memcpy(b.c, c + i, sizeof *c * (size_t)b.n);
        for (int k = 0; k < b.n; k++)
            if (b.c[k].numel > most)
                most = b.c[k].numel;
        int64_t blocks = (most + WB_CUDA_THREADS - 1) / WB_CUDA_THREADS;
        dim3 grid = {(unsigned)(blocks < 1024 ? blocks : 1024),
                     (unsigned)b.n, 1};
        dim3 block = {WB_CUDA_THREADS, 1, 1};
        void *args[] = {&b};
        err = wb_cu.cudaLaunchKernel((const void *)kernel, grid, block, args,
                                     0, stream);
        wb_rt_launches++;
        if (err != cudaSuccess)
            return wb_rt_cuda_fail(WB_ERR_DEVICE, "cannot launch the copy "
                                   "kernel", err);
    }
    return WB_OK;
}

/* n contiguous copies in one cudaMemcpyBatchAsync; WB_ERR_UNSUPPORTED
   when the stream or the driver does not take it. */
static wb_status wb_rt_memcpy_batch(const wb_cuda_copy *c, int n, int dev,
                                    void *stream)
{
    void *dsts[WB_RT_PENDING];
    const void *srcs[WB_RT_PENDING];
    size_t sizes[WB_RT_PENDING], first = 0;
    if (!stream || stream == cudaStreamLegacy ||
        atomic_load_explicit(&wb_rt_kernel.no_batch_api,
                             memory_order_relaxed))
        return WB_ERR_UNSUPPORTED;
    for (int k = 0; k < n; k++) {
        dsts[k] = c[k].dst;
        srcs[k] = c[k].src;
        sizes[k] = (size_t)c[k].numel * (size_t)c[k].esize;
    }
    struct cudaMemcpyAttributes attr;
    memset(&attr, 0, sizeof attr);
    attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
    attr.srcLocHint.type = attr.dstLocHint.type = cudaMemLocationTypeDevice;
    attr.srcLocHint.id = attr.dstLocHint.id = dev;
    cudaError_t err = wb_cu.cudaMemcpyBatchAsync(dsts, srcs, sizes, (size_t)n,
                                                 &attr, &first, 1, stream);
    if (err == cudaSuccess) {
        wb_rt_launches++;
        return WB_OK;
    }
    (void)wb_cu.cudaGetLastError();
    if (err != cudaErrorNotSupported &&
        err != cudaErrorCallRequiresNewerDriver)
        return wb_rt_cuda_fail(WB_ERR_DEVICE, "cannot enqueue the batched "
                               "copy", err);
    /* A driver older than the runtime refuses it, for good; the kernel
       does the same work. */
    atomic_store_explicit(&wb_rt_kernel.no_batch_api, true,
                          memory_order_relaxed);
    return WB_ERR_UNSUPPORTED;
}

/* A stream as one stream: NULL and cudaStreamLegacy both name the legacy
   default stream. */
static void *wb_rt_stream_id(void *stream)
{
    return stream == cudaStreamLegacy ? NULL : stream;
}

/* Whether s is tied to a stream other than stream (wb_storage_set_stream). */
static bool wb_rt_tied_elsewhere(const wb_storage *s, void *stream)
{
    return s->has_stream &&
           wb_rt_stream_id(s->stream) != wb_rt_stream_id(stream);
}

/* Outside a call, as inside one: s is written on stream only if it is not
   tied to another. */
static wb_status wb_rt_writable_now(const wb_storage *s, void *stream,
                                    const char *what)
{
    if (!wb_rt_tied_elsewhere(s, stream))
        return WB_OK;
    return wb_rt_fail(WB_ERR_DEVICE, "%s: the storage is tied to stream %p; "
                      "this thread's call stream is %p", what, s->stream,
                      stream);
}

/* Enqueues the recorded copies and lets their sources go. */
static wb_status wb_rt_submit(wb_rt_pending *p)
{
    wb_status st = WB_OK;
    int prev = wb_rt_enter(p->device);
    for (int i = 0, j; i < p->n && st == WB_OK; i = j) {
        bool dense = wb_rt_dense(&p->c[i]);
        for (j = i + 1; j < p->n; j++) {
            bool free_of = true;
            for (int k = i; k < j && free_of; k++)
                free_of = !wb_rt_conflict(&p->c[k], &p->c[j]);
            if (!free_of)
                break;
            dense = dense && wb_rt_dense(&p->c[j]);
        }
        st = dense ? wb_rt_memcpy_batch(&p->c[i], j - i, p->device, p->stream)
                   : WB_ERR_UNSUPPORTED;
        if (st == WB_ERR_UNSUPPORTED)
            st = wb_rt_launch(&p->c[i], j - i, p->stream);
    }
    wb_rt_leave(p->device, prev);
    /* The sources go once p is done with: a deleter may run a call. */
    wb_storage *hold[WB_RT_PENDING];
    int n = p->n;
    memcpy(hold, p->hold, sizeof *hold * (size_t)n);
    p->n = 0;
    for (int i = 0; i < n; i++)
        wb_storage_release(hold[i]);
    return st;
}

wb_rt_copy_fit wb_rt_device_copy_fits(const void *call, void *stream,
                                      const wb_tensor *t, const wb_tensor *v,
                                      int *device, void **call_stream)
{
    wb_rt_pending *p = &wb_rt_pend;
    const wb_storage *s = t->storage;
    wb_cuda_copy c;
    /* A call ends by flushing or, failed in its check phase, by dropping
       its copies, so a call starts with p->call unset.  One that finds
       another call's runs inside it, from a deleter of that call's values:
       it is refused, as it would take the other's copies for its own. */
    if (p->call != call) {
        if (p->call)
            return WB_RT_COPY_INSIDE_A_CALL;
        p->call = call;
        p->stream = wb_rt_stream_of(stream);
        p->device = s->device.device_id;
        p->st = WB_OK;
    }
    *device = p->device;
    *call_stream = p->stream;
    if (s->device.device_id != p->device)
        return WB_RT_COPY_OTHER_DEVICE;
    if (wb_rt_tied_elsewhere(s, p->stream))
        return WB_RT_COPY_OTHER_STREAM;
    if (!wb_rt_describe(&c, t, v))
        return WB_RT_COPY_TOO_MANY_DIMS;
    return WB_RT_COPY_FITS;
}

int wb_rt_device_copy_dims(void)
{
    return WB_CUDA_ND;
}

void wb_rt_defer_copy(wb_tensor *t, const wb_tensor *v)
{
    wb_rt_pending *p = &wb_rt_pend;
    wb_cuda_copy *c = &p->c[p->n];
    if (!wb_rt_describe(c, t, v) || c->numel == 0 || c->dst == c->src)
        return;  /* the check phase refused the first; nothing to copy */
    p->hold[p->n++] = wb_rt_storage_retain(v->storage);
    if (p->n == WB_RT_PENDING) {
        wb_status st = wb_rt_submit(p);
        if (p->st == WB_OK)
            p->st = st;
    }
}

void wb_rt_device_drop(const void *call)
{
    /* The check phase records nothing, so only the call is forgotten;
       a call refused inside another leaves the other's. */
    if (wb_rt_pend.call == call)
        wb_rt_pend.call = NULL;
}

wb_status wb_rt_device_flush(const void *call)
{
    wb_rt_pending *p = &wb_rt_pend;
    if (p->call != call)
        return WB_OK;  /* no CUDA copy was checked */
    /* Done: a deleter the submission runs may make a call. */
    wb_status early = p->st;
    p->call = NULL;
    wb_status st = p->n ? wb_rt_submit(p) : WB_OK;
    return st != WB_OK ? st : early;
}

wb_status wb_rt_device_grow(const wb_storage *s, size_t nbytes,
                            wb_rt_grow *g)
{
    void *data, *ctx;
    wb_deleter deleter;
    wb_status st = wb_rt_device_alloc(s->device, nbytes, &data, &deleter,
                                      &ctx);
    if (st != WB_OK)
        return st;
    /* Until the commit the husk owns the new block, so that giving the
       plan up frees it (wb_rt_grow_discard). */
    if ((st = wb_storage_wrap(data, nbytes, s->device, deleter, ctx,
                              &g->husk)) != WB_OK) {
        deleter(ctx, data);
        return st;
    }
    g->data = data;
    g->nbytes = nbytes;
    return WB_OK;
}

/* s takes the planned block and the husk its old one, which it returns. */
static wb_storage *wb_rt_trade_blocks(wb_storage *s, wb_rt_grow *g)
{
    wb_storage *h = g->husk;
    h->data = s->data;
    h->nbytes = s->nbytes;
    h->deleter = s->deleter;
    h->deleter_ctx = s->deleter_ctx;
    s->data = g->data;
    s->nbytes = g->nbytes;
    s->deleter = wb_rt_device_free;
    s->deleter_ctx = (void *)(intptr_t)s->device.device_id;
    g->data = NULL;
    g->husk = NULL;
    return h;
}

/* Records in p the copy of n bytes from src to dst, holding hold (and what
   it owns) until the copy is enqueued. */
static void wb_rt_defer_bytes(wb_rt_pending *p, void *dst, const void *src,
                              size_t n, wb_storage *hold)
{
    wb_cuda_copy *c = &p->c[p->n];
    memset(c, 0, sizeof *c);
    c->ndim = 1;
    c->sizes[0] = c->numel = (int64_t)n;
    c->dstrides[0] = c->sstrides[0] = 1;
    c->esize = 1;
    c->dst = dst;
    c->src = src;
    p->hold[p->n++] = hold;
    if (p->n == WB_RT_PENDING) {
        wb_status st = wb_rt_submit(p);
        if (p->st == WB_OK)
            p->st = st;
    }
}

void wb_rt_device_regrow(wb_storage *s, wb_rt_grow *g)
{
    /* The old block goes once its bytes are copied, with the call's other
       copies; the value's copy into s overlaps it and so comes after. */
    wb_storage *old = wb_rt_trade_blocks(s, g);
    if (old->nbytes)
        wb_rt_defer_bytes(&wb_rt_pend, s->data, old->data, old->nbytes, old);
    else
        wb_storage_release(old);
}

wb_status wb_rt_device_resize_now(wb_tensor *t, int ndim,
                                  const int64_t *sizes, wb_rt_grow *g)
{
    /* Outside a call: the copy of the old bytes is a batch of its own, on
       this thread's call stream, enqueued before t changes, so that a
       failure leaves t as it was. */
    wb_storage *s = t->storage;
    wb_status st = wb_rt_writable_now(s, wb_rt_stream_of(NULL),
                                      "wb_tensor_resize_");
    if (st != WB_OK) {
        wb_rt_grow_discard(g);
        return st;
    }
    if (s->nbytes) {
        wb_rt_pending q;
        q.n = 0;
        q.st = WB_OK;
        q.stream = wb_rt_stream_of(NULL);
        q.device = s->device.device_id;
        wb_rt_defer_bytes(&q, g->data, s->data, s->nbytes,
                          wb_storage_retain(s));
        if ((st = wb_rt_submit(&q)) != WB_OK) {
            wb_rt_grow_discard(g);
            return st;
        }
    }
    wb_storage_release(wb_rt_trade_blocks(s, g));
    wb_rt_apply_resize(t, ndim, sizes, g);
    return WB_OK;
}

wb_status wb_rt_device_copy_now(wb_tensor *dst, const wb_tensor *src)
{
    /* Outside a call: a batch of its own, on this thread's call stream. */
    wb_rt_pending q;
    q.n = 0;
    q.stream = wb_rt_stream_of(NULL);
    q.device = dst->storage->device.device_id;
    wb_status st = wb_rt_writable_now(dst->storage, q.stream,
                                      "wb_tensor_copy_");
    if (st != WB_OK)
        return st;
    if (!wb_rt_describe(&q.c[0], dst, src))
        return wb_rt_fail(WB_ERR_UNSUPPORTED, "a CUDA copy of views with "
                          "more than %d dimensions that do not merge",
                          WB_CUDA_ND);
    if (q.c[0].numel == 0 || q.c[0].dst == q.c[0].src)
        return WB_OK;
    q.hold[q.n++] = wb_rt_storage_retain(src->storage);
    return wb_rt_submit(&q);
}

#else /* !WB_WITH_CUDA */

void *wb_rt_cuda_symbol(const char *name)
{
    (void)name;
    return NULL;
}

wb_status wb_cuda_devices(int *count)
{
    (void)count;
    return wb_rt_fail(WB_ERR_UNSUPPORTED, "this build of wrapbake has no "
                      "CUDA support (built with WITH_CUDA=0)");
}

wb_status wb_rt_device_check(DLDevice device)
{
    if (device.device_type != kDLCPU)
        return wb_rt_fail(WB_ERR_DEVICE, "device type %d is not supported "
                          "by this build (only kDLCPU; CUDA needs "
                          "WITH_CUDA=1)", (int)device.device_type);
    return WB_OK;
}

wb_status wb_rt_device_alloc(DLDevice device, size_t nbytes, void **data,
                             wb_deleter *deleter, void **deleter_ctx)
{
    (void)nbytes; (void)data; (void)deleter; (void)deleter_ctx;
    return wb_rt_device_check(device);
}

wb_rt_copy_fit wb_rt_device_copy_fits(const void *call, void *stream,
                                      const wb_tensor *t, const wb_tensor *v,
                                      int *device, void **call_stream)
{
    (void)call; (void)stream; (void)v;
    *device = 0;
    *call_stream = NULL;
    return wb_rt_device_check(t->storage->device) == WB_OK
               ? WB_RT_COPY_FITS : WB_RT_COPY_NO_CUDA;
}

int wb_rt_device_copy_dims(void)
{
    return 0;
}

void wb_rt_defer_copy(wb_tensor *t, const wb_tensor *v)
{
    (void)t; (void)v;
}

wb_status wb_rt_device_grow(const wb_storage *s, size_t nbytes,
                            wb_rt_grow *g)
{
    (void)nbytes; (void)g;
    return wb_rt_device_check(s->device);
}

void wb_rt_device_regrow(wb_storage *s, wb_rt_grow *g)
{
    (void)s; (void)g;
}

wb_status wb_rt_device_resize_now(wb_tensor *t, int ndim,
                                  const int64_t *sizes, wb_rt_grow *g)
{
    (void)ndim; (void)sizes; (void)g;
    return wb_rt_device_check(t->storage->device);
}

void wb_rt_device_drop(const void *call)
{
    (void)call;
}

wb_status wb_rt_device_flush(const void *call)
{
    (void)call;
    return WB_OK;
}

wb_status wb_rt_device_copy_now(wb_tensor *dst, const wb_tensor *src)
{
    (void)src;
    return wb_rt_device_check(dst->storage->device);
}

#endif /* WB_WITH_CUDA */
