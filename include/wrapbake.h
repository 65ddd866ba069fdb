/*
 * wrapbake.h -- the public interface of wrapbake.
 *
 * wrapbake turns the description of a compiled, functionalized graph (which
 * inputs it mutates and how, which outputs alias what, how many values it
 * returns) into one straight-line C function with every branch decided ahead
 * of time, compiles it in-process with libtcc, and returns a wrapper whose
 * per-call cost is a few nanoseconds above a bare call of the graph.
 *
 * This header is the specification.  Conventions:
 *   - Every call that can fail returns a wb_status; WB_OK is 0.  On failure
 *     wb_last_error() returns a message naming the spec item, the argument
 *     and what was expected.  The message belongs to the calling thread and
 *     stays valid until that thread's next failing call.
 *   - Objects come in _new/_free (or _retain/_release) pairs; freeing or
 *     releasing NULL does nothing.  Each function says who owns what it
 *     returns.  Output parameters are written only on success.
 *   - The library never prints and never exits.  Its mutable global state is
 *     the lock around libtcc, the in-process code cache and its statistics
 *     (one lock), the pool of freed code pages and the address range the
 *     code is placed in (one lock), a lock that loads cc code one object at
 *     a time, the queue of auto-tier promotions (one lock and the thread
 *     serving it), the CUDA runtime, loaded once, and a per-thread cache of
 *     tensor headers, whose bound, one for all threads, only grows (see
 *     wb_thread_cache_flush).  The shared library is never unloaded: the
 *     promoter and a thread's exit may run its code after a plugin that
 *     loaded it is gone.  Fork handlers, registered with the first
 *     wrapper, hold the locks across fork, so a child may go on using the
 *     library (but not CUDA state the parent set up).
 */
#ifndef WRAPBAKE_H
#define WRAPBAKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <dlpack/dlpack.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Marks what the library publishes: everything else in it is hidden. */
#if defined(__GNUC__)
#define WB_API __attribute__((visibility("default")))
#else
#define WB_API
#endif

#define WB_VERSION_MAJOR 0
#define WB_VERSION_MINOR 1
#define WB_VERSION_PATCH 0
#define WB_VERSION "0.1.0"
/* Bumped whenever the layout of a public struct or a callback type changes,
   or a helper generated code calls changes or goes (a new helper leaves
   code generated before it working): 2 made the values a graph
   returns and a call hands back wb_value, so that an output may be a
   number as well as a tensor; 3 took away the helper that copied a hidden
   data mutation without a bump, and lets wb_rt_grad_swap answer -1 (leave
   the grad mode as the graph left it). */
#define WB_ABI_VERSION 3

/* Documented limits; exceeding one is an error that gives the limit. */
#define WB_MAX_DIMS 16        /* dimensions of a tensor */
#define WB_MAX_DEVICE_ID 255  /* device numbers run 0..WB_MAX_DEVICE_ID */
#define WB_MAX_INPUTS 1024    /* inputs of a spec */
#define WB_MAX_OUTPUTS 1024   /* user-visible outputs of a spec */
#define WB_MAX_BASES 1024     /* intermediate bases of a spec */
#define WB_MAX_GUARDS 16      /* guards of a spec */
#define WB_MAX_TOKENS 16      /* effect tokens of a spec */
#define WB_MAX_NAME 256       /* bytes of any name in a spec */

/* The version of the library actually linked (may differ from the header). */
WB_API const char *wb_version(void);
WB_API int wb_abi_version(void);

/* ---------------------------------------------------------------------- */
/* Status codes and errors                                                 */
/* ---------------------------------------------------------------------- */

typedef enum wb_status {
    WB_OK = 0,
    WB_ERR_INVALID,     /* a bad argument to an API function */
    WB_ERR_SPEC,        /* the spec is malformed or cannot be wrapped */
    WB_ERR_NOMEM,       /* an allocation failed; nothing was changed */
    WB_ERR_ARITY,       /* wrong number of arguments, outputs or values */
    WB_ERR_TYPE,        /* NULL where a tensor is required, dtype mismatch */
    WB_ERR_SHAPE,       /* sizes, strides or bounds do not fit */
    WB_ERR_DEVICE,      /* device mismatch or unsupported device */
    WB_ERR_GRAPH,       /* the graph function reported an error */
    WB_ERR_HOOK,        /* a hook or guard reported an error */
    WB_ERR_COMPILE,     /* the JIT could not compile the generated code */
    WB_ERR_UNSUPPORTED  /* valid request this build or process cannot do
                           (the cc tier in a privileged process) */
} wb_status;

/* A short constant name for a status ("WB_ERR_SPEC"); never NULL. */
WB_API const char *wb_status_str(wb_status status);

/* The detailed message of the calling thread's last failure ("" if none). */
WB_API const char *wb_last_error(void);

/* ---------------------------------------------------------------------- */
/* Storages and tensors                                                    */
/* ---------------------------------------------------------------------- */

/*
 * A storage owns a block of memory on one device, with a reference count.
 *
 * Version counters are PyTorch's.  A counter belongs to a tensor and is
 * shared by every view made from it (wb_tensor_as_strided, wb_tensor_detach,
 * the views a wrapper returns for aliased outputs).  A new tensor
 * (wb_tensor_new, a DLPack import, wb_tensor_from_storage) has a counter of
 * its own, so two tensors made independently on one storage do not share
 * one; wb_tensor_set_ and wb_tensor_resize_ keep the tensor's counter.
 * wb_tensor_copy_ and wb_tensor_set_ bump it by one.  A wrapper's call bumps
 * each mutated input as AOTAutograd's epilogue does: a data mutation once
 * (hidden from autograd too: the epilogue copies through a detached alias,
 * which shares the counter), a metadata mutation once (as_strided_), a
 * data+metadata one twice, a set_ once, a resize once (resize_ bumps
 * nothing, its copy once), an in-graph mutation once before the call (when
 * hidden, its version is put back after the call, whatever the graph did
 * to it).
 *
 * A tensor is a view of a storage: dtype, ndim, sizes, strides and an offset,
 * all in elements, plus flags and a dynamic-dims mask.  Tensors are reference
 * counted; functions returning a new tensor hand the caller one reference.
 * Strides are never negative; every element of a view lies inside its
 * storage (an empty view may start anywhere, as in PyTorch).
 */
typedef struct wb_storage wb_storage;
typedef struct wb_tensor wb_tensor;

/* Tensor flags. */
#define WB_TENSOR_REQUIRES_GRAD 0x1u

/* Frees the data of a wrapped storage; ctx is what was given to the wrap. */
typedef void (*wb_deleter)(void *ctx, void *data);

/* A new zero-filled storage of nbytes on device: kDLCPU, or kDLCUDA in a
   build with CUDA (wb_cuda_devices). */
WB_API wb_status wb_storage_new(DLDevice device, size_t nbytes,
                                wb_storage **out);
/* A storage over memory the caller owns; deleter (may be NULL) runs at the
   last release.  On failure the deleter is not called.  The storage is
   not resizable, as one from torch.from_blob is not: a resize that would
   grow it (wb_tensor_resize_, a resize mutation) fails with
   WB_ERR_INVALID, and the memory stays the caller's.  On a CUDA device
   the last release may come while a copy from the memory is still queued
   on the call's stream (a call's write-back), so the deleter frees in
   stream order: cudaFree, cudaFreeAsync on that stream, or a caching
   allocator that keeps the block from other streams until then, as
   PyTorch's does for memory allocated on the stream. */
WB_API wb_status wb_storage_wrap(void *data, size_t nbytes, DLDevice device,
                                 wb_deleter deleter, void *deleter_ctx,
                                 wb_storage **out);
WB_API wb_storage *wb_storage_retain(wb_storage *s);
WB_API void wb_storage_release(wb_storage *s);
WB_API void *wb_storage_data(const wb_storage *s);
WB_API size_t wb_storage_nbytes(const wb_storage *s);
WB_API DLDevice wb_storage_device(const wb_storage *s);
/* The version counter of the first tensor made on s, which keeps its
   counter in s (0 when none was made); versions belong to tensors: read
   them with wb_tensor_version. */
WB_API uint64_t wb_storage_version(const wb_storage *s);
/* The current reference count, for tests and leak checks. */
WB_API long wb_storage_refcount(const wb_storage *s);
/* CUDA: ties s to a stream (a cudaStream_t): a call, wb_tensor_copy_ or
   growing wb_tensor_resize_ that would write s on another stream fails
   with WB_ERR_DEVICE before anything is mutated.
   NULL and cudaStreamLegacy name one stream, the legacy default one.
   Untied (the default), s may be written on any stream. */
WB_API void wb_storage_set_stream(wb_storage *s, void *stream);
WB_API void wb_storage_unset_stream(wb_storage *s);

/* Element size in bytes of dtype, or 0 if dtype is not byte-addressable. */
WB_API size_t wb_dtype_size(DLDataType dtype);

/* A new contiguous zero-filled tensor with a storage of its own. */
WB_API wb_status wb_tensor_new(DLDataType dtype, DLDevice device, int ndim,
                               const int64_t *sizes, wb_tensor **out);
/* A new view of storage; strides NULL means contiguous.  Retains storage. */
WB_API wb_status wb_tensor_from_storage(wb_storage *storage, DLDataType dtype,
                                        int ndim, const int64_t *sizes,
                                        const int64_t *strides, int64_t offset,
                                        wb_tensor **out);
/* A new view of base's storage with base's dtype (torch.as_strided's
   view).  Like every tensor the library makes outside a call, it does not
   require grad: these functions do no autograd, and leave requires-grad
   to the caller (wb_tensor_set_requires_grad), where torch's view of a
   tensor that requires grad, and its copy_ and set_ with grad on from
   one, would require grad. */
WB_API wb_status wb_tensor_as_strided(const wb_tensor *base, int ndim,
                                      const int64_t *sizes,
                                      const int64_t *strides, int64_t offset,
                                      wb_tensor **out);
/* A new tensor object sharing t's storage and view, requires-grad cleared. */
WB_API wb_status wb_tensor_detach(const wb_tensor *t, wb_tensor **out);

/* Re-strides t in place (torch.Tensor.as_strided_); no data moves, and
   the version stays (a wrapper's metadata mutation bumps it, as
   AOTAutograd's epilogue does). */
WB_API wb_status wb_tensor_as_strided_(wb_tensor *t, int ndim,
                                       const int64_t *sizes,
                                       const int64_t *strides, int64_t offset);
/* Copies src's elements into dst (same dtype and sizes, any strides on
   either side, overlap refused); bumps dst's version. */
WB_API wb_status wb_tensor_copy_(wb_tensor *dst, const wb_tensor *src);
/* Resizes t in place to contiguous sizes, keeping its offset and growing its
   storage when it is too small (torch.Tensor.resize_).  A storage that a
   DLPack export holds (wb_tensor_to_dlpack) does not grow: WB_ERR_INVALID,
   as the export hands out its data where it lies.  Only storages the
   library allocated (wb_storage_new) grow: not one imported from DLPack,
   whose data is the producer's, nor one over the caller's memory. */
WB_API wb_status wb_tensor_resize_(wb_tensor *t, int ndim,
                                   const int64_t *sizes);
/* Makes t a view of src's storage with src's metadata (torch.Tensor.set_);
   t keeps its version counter, and bumps it.  src has t's dtype
   (WB_ERR_TYPE otherwise) and lies on t's device (WB_ERR_DEVICE). */
WB_API wb_status wb_tensor_set_(wb_tensor *t, const wb_tensor *src);
/* Promises that t's storage is never replaced: from now on set_ on t, by
   wb_tensor_set_ or a wrapper's set_ mutation, fails with WB_ERR_INVALID.
   A view a wrapper makes of the storage of a fixed graph value then holds
   that value instead of a reference to the storage, which spares two
   locked operations a view.  For a graph that keeps its values in buffers
   of its own; call it before t is shared with other threads.  It cannot
   be undone. */
WB_API void wb_tensor_fix_storage(wb_tensor *t);
WB_API bool wb_tensor_storage_fixed(const wb_tensor *t);

WB_API wb_tensor *wb_tensor_retain(wb_tensor *t);
WB_API void wb_tensor_release(wb_tensor *t);
WB_API long wb_tensor_refcount(const wb_tensor *t);

WB_API int wb_tensor_ndim(const wb_tensor *t);
WB_API const int64_t *wb_tensor_sizes(const wb_tensor *t);
WB_API const int64_t *wb_tensor_strides(const wb_tensor *t);
WB_API int64_t wb_tensor_offset(const wb_tensor *t);
WB_API int64_t wb_tensor_numel(const wb_tensor *t);
WB_API DLDataType wb_tensor_dtype(const wb_tensor *t);
WB_API DLDevice wb_tensor_device(const wb_tensor *t);
/* The storage t views (borrowed: retain it to keep it). */
WB_API wb_storage *wb_tensor_storage(const wb_tensor *t);
/* The address of element 0 (storage data + offset * element size). */
WB_API void *wb_tensor_data(const wb_tensor *t);
WB_API bool wb_tensor_is_contiguous(const wb_tensor *t);
WB_API uint32_t wb_tensor_flags(const wb_tensor *t);
WB_API bool wb_tensor_requires_grad(const wb_tensor *t);
WB_API void wb_tensor_set_requires_grad(wb_tensor *t, bool on);
/* Dimensions marked dynamic (bit d set: dim d), as recorded by wrappers. */
WB_API uint64_t wb_tensor_dynamic_dims(const wb_tensor *t);
WB_API void wb_tensor_set_dynamic_dims(wb_tensor *t, uint64_t mask);
/* t's version (torch.Tensor._version). */
WB_API uint64_t wb_tensor_version(const wb_tensor *t);

/* Takes ownership of mt on success (its deleter runs when the storage goes);
   on failure mt is untouched and still the caller's. */
WB_API wb_status wb_tensor_from_dlpack(DLManagedTensor *mt, wb_tensor **out);
/* A DLManagedTensor holding a reference to t's storage with a snapshot of
   t's view; the consumer calls its deleter exactly once. */
WB_API wb_status wb_tensor_to_dlpack(const wb_tensor *t,
                                     DLManagedTensor **out);

/* Frees the calling thread's cache of unused tensor headers, kept so that
   calls allocate nothing in steady state: 64 headers, or as many as one
   call of the largest wrapper made so far takes.  Threads free theirs at
   exit. */
WB_API void wb_thread_cache_flush(void);

/* ---------------------------------------------------------------------- */
/* CUDA                                                                    */
/* ---------------------------------------------------------------------- */

/*
 * Storages may live on CUDA devices (kDLCUDA) in a build with CUDA.  Views,
 * aliases, versions and DLPack work as on the CPU.  A call writes its data
 * mutations of CUDA inputs back asynchronously on its stream, at its end:
 * one batched copy per 32 contiguous copies on a stream of its own, else
 * one launch of a gather-copy kernel per 8 copies (docs/cuda.md).  The
 * CUDA runtime is loaded on first use: libcudart.so.13, or the file
 * $WRAPBAKE_CUDART names, which is loaded only when it is an absolute path
 * to a regular file of the user's or root's, writable by nobody else, on
 * a way (directories and links) that nobody else can change, as the disk
 * cache asks of its directory.
 */

/* The number of CUDA devices: WB_OK with *count >= 1; WB_ERR_UNSUPPORTED
   in a build without CUDA; WB_ERR_DEVICE, saying why, when none can be
   used (no driver, no device, a $WRAPBAKE_CUDART refused).  *count is
   written only with WB_OK. */
WB_API wb_status wb_cuda_devices(int *count);
/* The stream (a cudaStream_t) this thread's calls enqueue their CUDA work
   on, over each wrapper's own (wb_options.stream), until cleared.  As
   torch.cuda.current_stream, it is per thread; NULL is the legacy default
   stream. */
WB_API void wb_set_call_stream(void *stream);
WB_API void wb_clear_call_stream(void);
/* CUDA submissions (kernel launches, batched copies) this thread has made
   through wrapbake, for benchmarks and tests. */
WB_API uint64_t wb_cuda_launches(void);

/* ---------------------------------------------------------------------- */
/* Grad mode                                                               */
/* ---------------------------------------------------------------------- */

/* The per-thread grad mode (on by default), as torch.is_grad_enabled(). */
WB_API bool wb_grad_enabled(void);
WB_API void wb_set_grad_enabled(bool on);

/* ---------------------------------------------------------------------- */
/* Specs                                                                   */
/* ---------------------------------------------------------------------- */

/* How the wrapper writes an input back after the graph ran. */
typedef enum wb_mutation {
    WB_MUT_NONE = 0,       /* not mutated */
    WB_MUT_DATA,           /* copy the updated value in (version + 1) */
    WB_MUT_METADATA,       /* as_strided_ to the updated value's view (+ 1) */
    WB_MUT_DATA_METADATA,  /* as_strided_, then copy (+ 2) */
    WB_MUT_STORAGE,        /* set_: take the updated value's storage and view
                              (+ 1, on the input's own counter) */
    WB_MUT_RESIZE,         /* resize_ when sizes differ, then copy (+ 1,
                              for the copy; resize_ bumps nothing) */
    WB_MUT_IN_GRAPH        /* the graph mutated it; bump its version first */
} wb_mutation;

/* Input flags. */
#define WB_INPUT_DETACH 0x1u          /* training: pass a detached alias */
#define WB_INPUT_HIDDEN 0x2u          /* a data or in-graph mutation hidden
                                         from autograd: an in-graph one's
                                         version stays as it was before
                                         the call */
#define WB_INPUT_OUT 0x4u             /* keyword-only `out` argument */
#define WB_INPUT_OPTIONAL 0x8u        /* Tensor?: may be NULL; then it can
                                         be neither mutated nor aliased */

typedef enum wb_scalar_type {
    WB_SCALAR_INT = 1,   /* int, SymInt -> int64_t (wb_value.i) */
    WB_SCALAR_FLOAT,     /* float -> double (wb_value.f) */
    WB_SCALAR_BOOL,      /* bool -> bool (wb_value.b) */
    WB_SCALAR_OPAQUE,    /* any other argument, passed through as a
                            pointer (wb_value.p) */
    WB_SCALAR_NONE       /* an output that is None (wb_value.p NULL) */
} wb_scalar_type;

/* What a user-visible output is, relative to the inputs and the graph. */
typedef enum wb_alias {
    WB_OUT_NON_ALIAS = 0,       /* the graph's value as it is */
    WB_OUT_UNSAFE_VIEW_ALIAS,   /* treated as non-alias */
    WB_OUT_CUSTOM_FUNCTION_VIEW,/* treated as non-alias */
    WB_OUT_IS_INPUT,            /* input `base` itself (same object; of
                                   a synthetic base's member, a view of
                                   the base) */
    WB_OUT_ALIAS_OF_INPUT,      /* a view of input `base`'s storage */
    WB_OUT_ALIAS_OF_INTERMEDIATE,             /* view of intermediate base */
    WB_OUT_ALIAS_OF_INTERMEDIATE_SAVE_AS_OUTPUT,
    WB_OUT_ALIAS_OF_INTERMEDIATE_BASE_IS_USER_OUTPUT /* view of output base */
} wb_alias;

/* Argument directions, for signatures and tools. */
typedef enum wb_direction {
    WB_DIR_IN = 1, WB_DIR_INOUT, WB_DIR_OUT, WB_DIR_SCALAR
} wb_direction;

/* Hooks and guards receive the user data given with them.  A non-zero
   return aborts the call with WB_ERR_HOOK before anything is mutated.  They
   must return (no longjmp out of them): a first-call hook holds every other
   call to its wrapper until it has. */
typedef int (*wb_hook_fn)(void *ud);
typedef void (*wb_leave_fn)(void *ud);

typedef struct wb_spec wb_spec;

/* A new empty spec named name (copied; NULL means "graph"). */
WB_API wb_status wb_spec_new(const char *name, wb_spec **out);
WB_API void wb_spec_free(wb_spec *spec);
/* A deep copy (hooks included); the copy needs validating again. */
WB_API wb_status wb_spec_clone(const wb_spec *spec, wb_spec **out);

/* Inputs, in argument order.  index_out (may be NULL) receives the index. */
WB_API wb_status wb_spec_add_tensor(wb_spec *spec, const char *name,
                                    wb_mutation mutation, unsigned flags,
                                    int *index_out);
WB_API wb_status wb_spec_add_scalar(wb_spec *spec, const char *name,
                                    wb_scalar_type type, int *index_out);
/* Declares what input `index` must be: dtype (bits 0 for any), ndim (-1 for
   any).  Declared facts are checked at call time and let the emitter pick
   helpers specialized for them. */
WB_API wb_status wb_spec_declare_input(wb_spec *spec, int index,
                                       DLDataType dtype, int ndim);
/* Declares the device input `index` must be on: kDLCPU, or kDLCUDA with
   its number (0..WB_MAX_DEVICE_ID); device_type 0 undoes it.  The
   generated code then copies the data mutations of a CPU input without
   asking where it is, and those of a CUDA one through the batched
   write-back. */
WB_API wb_status wb_spec_declare_device(wb_spec *spec, int index,
                                        DLDevice device);

/* User-visible outputs, in return order.  base is the input, intermediate
   base or output index the alias kind refers to, -1 for non-aliases.
   requires_grad is set or cleared on every output except is-input ones;
   dynamic_dims is or-ed into the returned tensor's mask (bits 0 to 15,
   one a dim; a higher bit is refused with WB_ERR_SPEC). */
WB_API wb_status wb_spec_add_output(wb_spec *spec, const char *name,
                                    wb_alias kind, int base,
                                    bool requires_grad, uint64_t dynamic_dims,
                                    int *index_out);

/* A user-visible output that is not a tensor: a number the graph returns
   (WB_SCALAR_INT for a SymInt, WB_SCALAR_FLOAT, WB_SCALAR_BOOL) or None
   (WB_SCALAR_NONE).  The graph writes the number in its place among the
   values (wb_value.i, .f or .b; for None nothing), and the call hands it
   back there, as it is, in outs (None as .p NULL).  It aliases nothing,
   has no flags, and is no output's base. */
WB_API wb_status wb_spec_add_scalar_output(wb_spec *spec, const char *name,
                                           wb_scalar_type type,
                                           int *index_out);

/* Deduplicated inputs (AOTAutograd's AOTDedupeWrapper): tensor input
   `input` is, in every call, the same tensor object as the earlier input
   `of`, which is kept.  The graph gets the kept inputs only; a call whose
   two tensors differ fails, naming both, and changes nothing.  A
   duplicate has no mutation, flag or output of its own: those of the
   tensor are the kept input's.  of -1 undoes it. */
WB_API wb_status wb_spec_set_duplicate(wb_spec *spec, int input, int of);

/* Synthetic bases (AOTAutograd's AOTSyntheticBaseWrapper): tensor input
   `input` lies, in every call, on the storage of the earlier input `of`
   (of -1 undoes it), and the two are merged with every other input so
   tied into one synthetic base, a group of members.  Each call checks
   that the members lie on one storage with one dtype (in training, that
   they are views of one tensor, sharing its version counter), else fails
   with WB_ERR_HOOK, as a guard would, before anything changes; then it
   makes the base: a 1-D view of the whole storage (offset 0, stride 1,
   the first member's dtype) that shares the members' version counter
   when they share one, else has its own.  The graph gets the bases
   first (after the effect tokens), then the inputs outside them in
   order, then each member, for its sizes, strides and offset at call
   time (it reads the member's view, and writes only the base).  A
   member's data mutation is the base's: the graph returns the base's
   updated value among the updated inputs, first, and the call copies it
   into the base (version + 1 on the base's counter); in the graph
   (WB_MUT_IN_GRAPH, kept input mutations), the graph writes the base
   itself and returns nothing for it, and the call bumps the base's
   version once before it, or, hidden from autograd (every member that
   writes is), puts it back after it.  A member whose
   view the graph changes (a metadata or data+metadata mutation) gets
   as_strided_ from a value the graph returns after the outputs, before
   the intermediate bases, one per such member in input order (+ 1 on
   its counter).  An output that aliases a member, or is one (is-input),
   is a view of the storage with the value's own view, sharing the
   base's counter, as AOTAutograd returns it.  Members have data,
   metadata, data+metadata or in-graph mutations or none, are not
   detached, and one of them mutates data, in the graph for every member
   that does or for none, as AOTAutograd decides it for the base. */
WB_API wb_status wb_spec_set_synthetic_base(wb_spec *spec, int input,
                                            int of);

/* Graph-level settings. */
WB_API wb_status wb_spec_set_intermediate_bases(wb_spec *spec, int count);
/* Functionalized RNG (AOTAutograd's FunctionalizedRngRuntimeWrapper).
   Before the graph runs, get gives the generator's seed and offset (two
   new tensor references; nonzero fails the call with WB_ERR_HOOK), which
   the graph gets after its other arguments.  The graph returns the
   generator's new offset as its last value; once the call has succeeded,
   set receives it (borrowed), so a failed call leaves the generator as it
   was. */
typedef int (*wb_rng_get_fn)(void *ud, wb_tensor **seed, wb_tensor **offset);
typedef void (*wb_rng_set_fn)(void *ud, wb_tensor *offset);
/* Gives the spec functionalized RNG with these callbacks; get and set
   NULL turn it off.  A spec read from text with functional_rng asks for
   it, and wrappers of it cannot be made until it has its callbacks. */
WB_API wb_status wb_spec_set_rng(wb_spec *spec, wb_rng_get_fn get,
                                 wb_rng_set_fn set, void *ud);

/* Effect tokens (AOTAutograd's EffectTokensWrapper): the graph gets count
   placeholder arguments (NULL tensors) before the others, and returns
   count values before the others, which the wrapper drops (NULL allowed);
   0..WB_MAX_TOKENS. */
WB_API wb_status wb_spec_set_effect_tokens(wb_spec *spec, int count);
WB_API wb_status wb_spec_set_training(wb_spec *spec, bool training);
WB_API wb_status wb_spec_set_keep_input_mutations(wb_spec *spec, bool keep);
/* -1: leave the grad mode as it is after the call; 0 or 1: set it. */
WB_API wb_status wb_spec_set_grad_mode_at_end(wb_spec *spec, int mode);
WB_API wb_status wb_spec_set_before_call(wb_spec *spec, wb_hook_fn fn,
                                         void *ud);
/* Runs once per wrapper, before the first call that gets past the argument
   checks; calls on other threads wait for it, asleep, and a failure lets
   the next call run it again. */
WB_API wb_status wb_spec_set_first_call(wb_spec *spec, wb_hook_fn fn,
                                        void *ud);
/* Guards are entered in order around the graph call and left in reverse;
   each needs both enter and leave. */
WB_API wb_status wb_spec_add_guard(wb_spec *spec, wb_hook_fn enter,
                                   wb_leave_fn leave, void *ud);

/* A spec from its text: an ATen function schema, optionally with wrapbake's
   extension (docs/spec-format.md), e.g.
   "add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)".
   WB_ERR_SPEC says where the text is wrong ("LINE:COL: expected ...") or
   why the schema cannot be wrapped.  The spec is not yet validated. */
WB_API wb_status wb_spec_parse(const char *text, wb_spec **out);

/* Checks the spec and derives its facts; WB_ERR_SPEC says what is wrong.
   A spec changed after validation must be validated again. */
WB_API wb_status wb_spec_validate(wb_spec *spec);

/* Facts; the derived ones need a validated spec (else -1, NULL, 0). */
WB_API const char *wb_spec_name(const wb_spec *spec);
WB_API int wb_spec_num_inputs(const wb_spec *spec);
WB_API int wb_spec_num_outputs(const wb_spec *spec);
/* The values the graph returns, in this order: the effect tokens, the M
   updated inputs (synthetic bases first), the outputs, the new views of
   members of synthetic bases, the intermediate bases, the RNG offset. */
WB_API int wb_spec_num_values(const wb_spec *spec);
/* The arguments the graph gets, in this order: the effect tokens, the
   synthetic bases, the inputs that are neither duplicates of earlier ones
   nor members of synthetic bases, the members, the RNG seed and offset. */
WB_API int wb_spec_num_graph_args(const wb_spec *spec);
       WB_API int wb_spec_num_updated(const wb_spec *spec);  /* M */
       WB_API wb_direction wb_spec_direction(const wb_spec *spec, int input);
/* The C type of an input: "wb_tensor *", "int64_t", "double", "bool" or
   "const void *". */
WB_API const char *wb_spec_c_type(const wb_spec *spec, int input);
/* The tensor-only signature, scalars left out, e.g.
   "(INOUT cache, IN x, IN w)"; owned by the spec. */
WB_API const char *wb_spec_signature(const wb_spec *spec);

/* ---------------------------------------------------------------------- */
/* Wrappers                                                                */
/* ---------------------------------------------------------------------- */

/* One value: an argument of a call, a value the graph returns, an output
   a call hands back.  The spec says which member is live: t for tensors,
   i, f and b for the scalar types, p for an opaque argument (the caller's
   own representation) and for a None output (NULL). */
typedef union wb_value {
    wb_tensor *t;
    int64_t i;
    double f;
    bool b;
    const void *p;
} wb_value;
/* An argument of a call: a value. */
typedef wb_value wb_arg;

/*
 * The compiled graph.  It reads args (borrowed): the effect tokens (NULL
 * tensors), the synthetic bases, the call's inputs that are neither
 * duplicates of earlier ones nor members of synthetic bases, the members
 * (for their views), then the RNG seed and offset (wb_spec_num_graph_args
 * in all).  It writes up to nvalues values, each a new tensor reference
 * (values[i].t) but for the outputs that are numbers
 * (wb_spec_add_scalar_output: .i, .f or .b, nothing for None): the effect
 * tokens (which may be NULL), the M updated inputs (the synthetic bases'
 * mutated after the graph first), the outputs, the members' new views,
 * the intermediate bases, then the new RNG offset.  It returns how many
 * values it produced, or a negative number on failure.  Whatever
 * non-NULL references it leaves in values, on success or failure, belong
 * to the wrapper from then on.  A view output's value that lies on the
 * storage its base will have after the call's mutations, and whose only
 * reference the graph handed over, is returned as that view itself (with
 * the output's flags), which spares the view a header and a storage
 * reference of its own.
 */
typedef int (*wb_graph_fn)(void *ctx, const wb_arg *args, int nargs,
                           wb_value *values, int nvalues);

typedef enum wb_tier {
    WB_TIER_DEFAULT = 0,  /* tcc */
    WB_TIER_INTERP,       /* the reference interpreter */
    WB_TIER_TCC,          /* straight-line C compiled by libtcc */
    WB_TIER_CC,           /* the same C built by the system compiler at -O2 */
    WB_TIER_AUTO,         /* tcc at once, then cc from a background compile */
    WB_TIER_AOT           /* the same C compiled into the program ahead of
                             time by `wrapbake emit --aot` */
} wb_tier;

/* wb_options.flags */
#define WB_OPT_NO_SHARE      0x1u  /* compile code of its own, even when a
                                      wrapper of an equal spec has some */
#define WB_OPT_NO_DISK_CACHE 0x2u  /* cc: neither read nor fill the disk
                                      cache */
/* Every flag this version knows; a wrapper asked for any other bit is
   refused (WB_ERR_INVALID), so a flag from a newer header is not silently
   ignored. */
#define WB_OPT_ALL (WB_OPT_NO_SHARE | WB_OPT_NO_DISK_CACHE)

/* Wrapper options; a zeroed struct (or NULL) gives the defaults. */
typedef struct wb_options {
    wb_tier tier;
    unsigned flags;          /* WB_OPT_* */
    /* WB_TIER_AUTO: the background compile starts after this many calls
       (0: 1000) or this many milliseconds after creation (0: never by
       time), whichever comes first. */
    uint64_t promote_calls;
    uint32_t promote_ms;
    /* cc and auto: the seconds the system compiler may run (0: 60). */
    uint32_t cc_timeout_s;
    /* cc and auto: the compiler command, split at blanks and run without a
       shell (NULL: $CC, then "cc"). */
    const char *cc;
    /* CUDA: the stream (a cudaStream_t) calls enqueue their device work on,
       unless the calling thread set one (wb_set_call_stream); NULL is the
       legacy default stream. */
    void *stream;
} wb_options;

typedef struct wb_wrapper wb_wrapper;

/* A wrapper for graph over a private copy of spec (validated here if it was
   not); spec stays the caller's.  The wrapper is immutable and may be called
   from many threads at once.  An output's flags and dynamic dims are
   written on its tensor atomically and only when they change, so that
   calls which hand out one tensor at once (an is-input output, a value
   the graph keeps) write nothing to it once the first calls have set
   them.  Wrappers of equal specs on one compiled tier share one compiled
   function (see WB_OPT_NO_SHARE).  On WB_TIER_CC a
   failing system compiler fails the call with its diagnostics; on
   WB_TIER_AUTO the wrapper stays on tcc and wb_wrapper_note() says why.
   A process running with privileges its user lacks (setuid, file
   capabilities) runs no system compiler: WB_TIER_CC fails with
   WB_ERR_UNSUPPORTED, and WB_TIER_AUTO stays on tcc.  Nor does a process
   whose SIGCHLD is ignored (SIG_IGN or SA_NOCLDWAIT): a compile fails
   with WB_ERR_COMPILE (docs/api.md). */
WB_API wb_status wb_wrapper_new(const wb_spec *spec, wb_graph_fn graph,
                                void *graph_ctx, const wb_options *options,
                                wb_wrapper **out);

/* n wrappers at once: specs[i] over graphs[i] with ctxs[i] (ctxs may be
   NULL).  On tcc every spec not already compiled goes through one libtcc
   state, which costs a fraction of n separate compiles.  All or nothing: on
   failure no wrapper is left and the message names the failing spec. */
WB_API wb_status wb_wrappers_new(int n, const wb_spec *const *specs,
                                 const wb_graph_fn *graphs, void *const *ctxs,
                                 const wb_options *options, wb_wrapper **out);

/* Frees w (NULL does nothing).  A pending promotion is cancelled (a running
   system compiler is stopped).  A free from inside a call of w on the
   calling thread (from its graph, a hook or a guard) is deferred until that
   call returns (the outermost one, when w's graph calls w again): the call
   returns its outputs and status as usual, and w is gone when wb_call
   returns.  Freeing a wrapper while another thread is calling it, or may
   still call it, is a programming error, like destroying a mutex another
   thread holds; the library does not detect it. */
WB_API void wb_wrapper_free(wb_wrapper *w);

/*
 * One call.  args are borrowed; on WB_OK outs[0..outputs) receive the
 * outputs: a new reference each in .t, or a number as the graph returned
 * it (None as .p NULL).  nouts must be at least the number of outputs.  On any
 * failure no input is mutated, no output is written and no reference leaks,
 * with one exception: CUDA refusing to enqueue the write-back (a lost
 * device, an error left by earlier work) is reported as WB_ERR_DEVICE after
 * the commit, and what the device holds is then undefined, as after any
 * CUDA error.
 */
WB_API wb_status wb_call(wb_wrapper *w, const wb_arg *args, int nargs,
                         wb_value *outs, int nouts);

/* The tier serving calls now (never WB_TIER_AUTO or WB_TIER_DEFAULT). */
WB_API wb_tier wb_wrapper_tier(const wb_wrapper *w);
WB_API const char *wb_tier_name(wb_tier tier);
/* Why the wrapper serves on its tier, when there is something to say (an
   auto wrapper that could not promote and the compiler's reason, a cc
   wrapper loaded from the disk cache, a disk-cache miss explained); NULL
   otherwise.  Owned by w; stable once the tier no longer changes. */
WB_API const char *wb_wrapper_note(const wb_wrapper *w);
/* The generated C the wrapper runs, for every compiler: on tcc and cc with
   #line directives into the spec, as `wrapbake emit` prints it (libtcc
   compiled its own branch of it, and a tcc wrapper makes the text when
   first asked), on aot without them.  Owned by w; NULL for the
   interpreter, or when out of memory. */
WB_API const char *wb_wrapper_source(const wb_wrapper *w);
/* The wrapper's own copy of its spec. */
WB_API const wb_spec *wb_wrapper_spec(const wb_wrapper *w);

/* ---------------------------------------------------------------------- */
/* Ahead-of-time wrappers                                                  */
/* ---------------------------------------------------------------------- */

/* The part of a wrapper generated code sees, and the function it defines. */
typedef struct wb_env wb_env;
typedef int (*wb_entry_fn)(const wb_env *e, const wb_arg *args, int nargs,
                           wb_value *outs, int nouts);

/* Hex digits of a fingerprint, without the terminating NUL. */
#define WB_FINGERPRINT_LEN 64

/* The SHA-256, in hex, of the C this library generates for spec: what
   ahead-of-time code records to prove it was generated for this spec by an
   emitter that agrees with this library. */
WB_API wb_status wb_spec_fingerprint(const wb_spec *spec,
                                     char out[WB_FINGERPRINT_LEN + 1]);

/* A wrapper over entry, the function `wrapbake emit --aot` generated for
   spec, which records fingerprint.  Refused (WB_ERR_SPEC) when the
   fingerprint is not spec's here: the code is stale or for another spec.
   Needs no compiler; links without libtcc. */
WB_API wb_status wb_wrapper_new_aot(const wb_spec *spec, wb_entry_fn entry,
                                    const char *fingerprint, wb_graph_fn graph,
                                    void *graph_ctx, wb_wrapper **out);

/* ---------------------------------------------------------------------- */
/* Caches                                                                  */
/* ---------------------------------------------------------------------- */

/*
 * Compiled code is cached twice.  In the process, wrappers of equal specs
 * on one tier share one function, freed with the last of them.  On disk,
 * cc-tier shared objects live under $WRAPBAKE_CACHE_DIR (default
 * $XDG_CACHE_HOME/wrapbake, then ~/.cache/wrapbake), keyed by the SHA-256
 * of the generated C, the compiler's identity and version, the flags and
 * WB_ABI_VERSION.  Entries are written atomically, checked against their
 * recorded hash before loading (a damaged one is rebuilt), and the
 * directory is kept under a size bound ($WRAPBAKE_CACHE_MAX bytes, default
 * 256 MiB; oldest used first out).
 *
 * What the disk cache trusts (docs/disk-cache.md has the reasons):
 *   - The directory must belong to the effective user and be writable by
 *     nobody else, and every directory and link met on the way to it
 *     (inside links' targets too) to the user or root, the directories
 *     writable by nobody else unless sticky.  Otherwise the
 *     disk cache is off: nothing in the directory is read, written or
 *     removed, and wb_wrapper_note() and wb_cache_explain() say why.  In a
 *     setuid or setcap process the environment is not read.
 *   - An entry is read only if it is a regular file of the user's,
 *     writable by nobody else and of bounded size; files are opened
 *     without following links or blocking.  Anything else at an entry's
 *     name is ignored: never loaded, replaced or removed.
 *   - The cache touches only names it makes (64 hex digits and .so or
 *     .meta, and its own .tmp- files): other files in the directory are
 *     left alone, by eviction and by wb_cache_clear() alike.
 *   - An object is read once, hashed, and loaded from a private copy of
 *     the bytes that were checked, never from the cache's path again; it
 *     is stored only after it has loaded and its entry point was found.
 *   - Compiles and loads use a fresh directory under $TMPDIR (default
 *     /tmp), which must be safe from renames by others: it and every
 *     directory above it belong to the user or root and are writable by
 *     nobody else, or sticky.
 */
typedef struct wb_cache_stats {
    uint64_t shared;         /* wrappers that reused in-process code */
    uint64_t compiled;       /* functions compiled (tcc or cc) */
    uint64_t disk_hits;      /* cc objects loaded from the disk cache */
    uint64_t disk_misses;    /* cc lookups that had to compile */
    uint64_t disk_rebuilt;   /* damaged entries found and rebuilt */
    uint64_t disk_evicted;   /* entries removed to keep the size bound */
    double compile_ms_saved; /* recorded compile time of the hits */
} wb_cache_stats;

WB_API void wb_cache_stats_get(wb_cache_stats *out);
/* Removes every entry of the disk cache: the cache's own files, nothing
   else.  Refused (WB_ERR_INVALID), removing nothing, when the directory is
   not one the cache trusts.  In-process code stays until its last wrapper
   goes. */
WB_API wb_status wb_cache_clear(void);
/* The disk cache's directory, NULL when the environment names none: in a
   buffer of the calling thread's, which its next call rewrites and which
   lasts until the thread exits. */
WB_API const char *wb_cache_dir(void);
/* Why a cc wrapper for spec with options would hit or miss the disk cache:
   the entry it would load, or the nearest entry and which part of the key
   differs, or why the cache is off ("off: ..."), or why the compiler may
   not run ("refused: ...").  *out is malloc'ed and the caller's to
   free(). */
WB_API wb_status wb_cache_explain(const wb_spec *spec,
                                  const wb_options *options, char **out);

/* The generated C for a validated spec, without compiling it.  *out is
   malloc'ed and the caller's to free(). */
WB_API wb_status wb_emit_c(const wb_spec *spec, char **out);

#ifdef __cplusplus
}
#endif

#endif /* WRAPBAKE_H */
