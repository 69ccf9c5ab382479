/* npumem's C ABI: for FFI, ctypes and framework plug-ins.
 *
 * Two ways in:
 *  - npumem_malloc / npumem_free have the exact signatures of PyTorch's
 *    CUDAPluggableAllocator and torch_npu's NPUPluggableAllocator, so libnpumem.so
 *    loads there unchanged. They route to one process-wide allocator per device
 *    index, made on first use from NPUMEM_DEVICE (a device spec, default "sim") and
 *    NPUMEM_ALLOC_CONF, or earlier by npumem_init().
 *  - Handles: npumem_allocator_create() makes an allocator the caller owns.
 *
 * Errors are status codes plus a message (npumem_last_error()); no call throws.
 * The calls that return a status, and npumem_malloc / npumem_free, replace this
 * thread's last error: it is empty after a success. docs/C_API.md has the details. */
#ifndef NPUMEM_NPUMEM_H
#define NPUMEM_NPUMEM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#if defined(__GNUC__)
#define NPUMEM_API __attribute__((visibility("default")))
#else
#define NPUMEM_API
#endif

/* C++ callers see what C callers rely on: nothing is thrown across the ABI. */
#ifdef __cplusplus
#define NPUMEM_NOEXCEPT noexcept
extern "C" {
#else
#define NPUMEM_NOEXCEPT
#endif

typedef enum npumem_status {
  NPUMEM_OK = 0,
  NPUMEM_OUT_OF_MEMORY = 1,    /* no tier, cache release or quota could serve it */
  NPUMEM_INVALID_POINTER = 2,  /* not live in this allocator (e.g. a double free) */
  NPUMEM_INVALID_CONFIG = 3,   /* a bad device spec or config string */
  NPUMEM_INVALID_ARGUMENT = 4, /* NULL where a value is needed, a bad index or key */
  NPUMEM_INTERNAL = 5          /* a bug or a host failure; the message says which */
} npumem_status_t;

typedef struct npumem_allocator npumem_allocator_t;

/* Where a pool's allocations come from: any tier (HBM first, then DDR when spilling
 * is on), or one tier only (never spilling). */
typedef enum npumem_tier {
  NPUMEM_TIER_ANY = -1,
  NPUMEM_TIER_HBM = 0,
  NPUMEM_TIER_DDR = 1
} npumem_tier_t;

/* The main figures of Stats (include/npumem/stats.h), over all pools and tiers
 * unless the name says a tier. Byte counts are rounded block sizes except
 * requested_bytes. npumem_stat() reads any other figure by its PyTorch key. */
typedef struct npumem_stats_s {
  int64_t allocated_bytes;
  int64_t allocated_bytes_peak;
  int64_t requested_bytes;
  int64_t reserved_bytes;
  int64_t reserved_bytes_peak;
  int64_t allocations; /* blocks handed out now */
  int64_t segments;    /* segments (or mapped ranges) held now */
  int64_t hbm_allocated_bytes;
  int64_t hbm_reserved_bytes;
  int64_t ddr_allocated_bytes;
  int64_t ddr_reserved_bytes;
  int64_t num_alloc_retries;
  int64_t num_ooms;
  int64_t num_spills;
  int64_t num_reclaims;
  int64_t num_device_alloc;
  int64_t num_device_free;
} npumem_stats_t;

/* "0.1.0": the version of the loaded library. */
NPUMEM_API const char* npumem_version(void) NPUMEM_NOEXCEPT;
/* "ok", "out_of_memory", ...; "unknown" for a value outside the enum. */
NPUMEM_API const char* npumem_status_name(npumem_status_t status) NPUMEM_NOEXCEPT;
/* This thread's message of its last call: "" after a success. Valid until the
 * thread's next npumem call. */
NPUMEM_API const char* npumem_last_error(void) NPUMEM_NOEXCEPT;

/* ---- The pluggable-allocator entry points and the process-wide allocators ---- */

/* void* my_malloc(ssize_t size, int device, cudaStream_t stream) of PyTorch. Returns
 * NULL on failure (and sets the last error). The block remembers the stream: once a
 * second stream allocates, a block freed on one stream serves another only after an
 * event recorded at the free has completed (docs/DESIGN.md, "Streams"). */
NPUMEM_API void* npumem_malloc(ssize_t size, int device, void* stream) NPUMEM_NOEXCEPT;
/* void my_free(void* ptr, ssize_t size, int device, cudaStream_t stream). NULL is a
 * no-op; a pointer not live on that device sets the last error and changes nothing.
 * size and stream are ignored: the allocator knows each block's size and stream. */
NPUMEM_API void npumem_free(void* ptr, ssize_t size, int device, void* stream) NPUMEM_NOEXCEPT;
/* void record_stream_fn(void* ptr, aclrtStream / cudaStream_t stream), which
 * torch_npu's NPUPluggableAllocator (and PyTorch's CUDAPluggableAllocator) call for
 * tensor.record_stream(s): the live allocation `ptr`, on whichever device holds it,
 * is also used by `stream`, so once freed it serves no stream until events recorded
 * on all its streams have completed. A pointer live on no device sets the last
 * error and changes nothing. */
NPUMEM_API void npumem_record_stream(void* ptr, void* stream) NPUMEM_NOEXCEPT;

/* Makes the process-wide allocator of a device index before first use. NULL spec or
 * conf: read NPUMEM_DEVICE / NPUMEM_ALLOC_CONF. INVALID_ARGUMENT when the index
 * already has one. */
NPUMEM_API npumem_status_t npumem_init(int device, const char* spec,
                                       const char* conf) NPUMEM_NOEXCEPT;
/* The process-wide allocator of a device index (made now if it does not exist yet),
 * for the stats, snapshot and empty_cache calls below. It lives until the process
 * exits and cannot be destroyed. */
NPUMEM_API npumem_status_t npumem_device_allocator(int device,
                                                   npumem_allocator_t** out) NPUMEM_NOEXCEPT;
/* In a child made by fork(): puts the process-wide allocators it inherited on a stats
 * page of its own, so `npumem smi` lists it (the parent's page stays the parent's). Does
 * nothing in any other process or with NPUMEM_STATS_PAGE=0. npumem's Python module calls
 * it after every fork. */
NPUMEM_API void npumem_publish_after_fork(void) NPUMEM_NOEXCEPT;

/* ---- Allocators the caller owns ---- */

/* spec: a device spec ("sim:hbm=1GiB", "host", "cuda:0"); conf: "key:value,..." as
 * NPUMEM_ALLOC_CONF, or NULL or "" for the defaults. */
NPUMEM_API npumem_status_t npumem_allocator_create(const char* spec, const char* conf,
                                                   npumem_allocator_t** out) NPUMEM_NOEXCEPT;
/* Releases the allocator and all its memory; pointers from it become invalid.
 * NULL is a no-op. The handle itself stays (a few bytes): any later call on it,
 * destroy included, is INVALID_ARGUMENT rather than undefined behaviour. */
NPUMEM_API npumem_status_t npumem_allocator_destroy(npumem_allocator_t* allocator) NPUMEM_NOEXCEPT;

/* ---- Calls on any allocator handle ---- */

/* *out is NULL on failure. size 0 gives a unique valid pointer. */
NPUMEM_API npumem_status_t npumem_allocate(npumem_allocator_t* allocator, size_t size,
                                           void** out) NPUMEM_NOEXCEPT;
/* NULL is a no-op; a pointer not live here is INVALID_POINTER and changes nothing. */
NPUMEM_API npumem_status_t npumem_deallocate(npumem_allocator_t* allocator,
                                             void* ptr) NPUMEM_NOEXCEPT;

NPUMEM_API npumem_status_t npumem_stats(npumem_allocator_t* allocator,
                                        npumem_stats_t* out) NPUMEM_NOEXCEPT;
/* One figure by its torch.cuda.memory_stats() key, e.g. "allocated_bytes.all.current",
 * "reserved_bytes.hbm.peak", "num_ooms". An unknown key is INVALID_ARGUMENT. */
NPUMEM_API npumem_status_t npumem_stat(npumem_allocator_t* allocator, const char* key,
                                       int64_t* out) NPUMEM_NOEXCEPT;
NPUMEM_API npumem_status_t npumem_reset_peak_stats(npumem_allocator_t* allocator) NPUMEM_NOEXCEPT;
/* Zeroes the accumulated counts (each statistic's allocated and freed, num_ooms, ...);
 * current values and peaks stay (torch.cuda.reset_accumulated_memory_stats). */
NPUMEM_API npumem_status_t npumem_reset_accumulated_stats(npumem_allocator_t* allocator)
    NPUMEM_NOEXCEPT;
/* Caps the HBM the allocator may reserve at `fraction` (0 to 1) of the tier's capacity
 * (torch.cuda.set_per_process_memory_fraction): growth past it spills to DDR or is an
 * OUT_OF_MEMORY whose message names the fraction. Outside [0, 1]: INVALID_CONFIG. */
NPUMEM_API npumem_status_t npumem_set_memory_fraction(npumem_allocator_t* allocator,
                                                      double fraction) NPUMEM_NOEXCEPT;
/* Grows or shrinks a live allocation in place (the seed's aclrtMemReuse: growing needs
 * a free neighbour); *resized (may be NULL) is 1 when it did, 0 when it could not and
 * nothing changed. A pointer not live here is INVALID_POINTER. */
NPUMEM_API npumem_status_t npumem_resize(npumem_allocator_t* allocator, void* ptr, size_t size,
                                         int* resized) NPUMEM_NOEXCEPT;
/* Creates pool `name` with a quota in bytes (0: none). */
NPUMEM_API npumem_status_t npumem_create_pool(npumem_allocator_t* allocator, const char* name,
                                              size_t quota_bytes) NPUMEM_NOEXCEPT;
/* Removes pool `name` (a model unloaded): its memory goes back to the device and the
 * name is free for npumem_create_pool again; released (may be NULL) gets the bytes.
 * INVALID_CONFIG for the default pool, an unknown pool, one holding live allocations
 * and one a pool scope routes to (npumem_last_error() says which). */
NPUMEM_API npumem_status_t npumem_remove_pool(npumem_allocator_t* allocator, const char* name,
                                              size_t* released) NPUMEM_NOEXCEPT;
/* A pool as npumem_pool_info reads it. */
typedef struct npumem_pool_info_s {
  char* name;           /* free with npumem_string_free() */
  uint64_t quota_bytes; /* 0: no quota */
  npumem_tier_t tier;   /* the tier it is pinned to; NPUMEM_TIER_ANY: none */
  npumem_stats_t stats; /* its own figures: what its allocations hold */
} npumem_pool_info_t;

/* The pools the allocator has now: "default" and those made and not removed. */
NPUMEM_API npumem_status_t npumem_pool_count(npumem_allocator_t* allocator,
                                             size_t* count) NPUMEM_NOEXCEPT;
/* Pool `index` (0: "default", then in the order they were made; a removal shifts the
 * later ones down). Past the last: INVALID_ARGUMENT, and out->name is NULL. */
NPUMEM_API npumem_status_t npumem_pool_info(npumem_allocator_t* allocator, size_t index,
                                            npumem_pool_info_t* out) NPUMEM_NOEXCEPT;
/* The statistics of pool `name` alone (npumem_stats covers them all); INVALID_CONFIG
 * for an unknown pool. */
NPUMEM_API npumem_status_t npumem_pool_stats(npumem_allocator_t* allocator, const char* name,
                                             npumem_stats_t* out) NPUMEM_NOEXCEPT;
/* Routes this thread's npumem_allocate and npumem_malloc calls from now on to pool `name`
 * of whichever allocator they reach (NULL or "": the default pool), as a C++ PoolScope
 * or Python's npumem.pool() does: the pluggable allocator's way to a model's pool. An
 * allocator without the pool fails those calls with INVALID_CONFIG ("unknown pool").
 * It holds no scope between calls, so the pool may still be removed (npumem_remove_pool). */
NPUMEM_API npumem_status_t npumem_set_pool(const char* name) NPUMEM_NOEXCEPT;
/* Tags the blocks this thread allocates from now on (NULL or "": no tag); tags group
 * memory in snapshots, leak reports and the HTML timeline. */
NPUMEM_API npumem_status_t npumem_set_tag(const char* tag) NPUMEM_NOEXCEPT;
/* Releases every cached free segment; released (may be NULL) gets the bytes. */
NPUMEM_API npumem_status_t npumem_empty_cache(npumem_allocator_t* allocator,
                                              size_t* released) NPUMEM_NOEXCEPT;
/* Marks the start of an iteration (training step, inference batch); observers and
 * strategies that learn per iteration use it. */
NPUMEM_API npumem_status_t npumem_iteration(npumem_allocator_t* allocator) NPUMEM_NOEXCEPT;
/* npumem_iteration for an iteration whose shape the caller names by `key` (a batch size,
 * a sequence-length bucket): strategy:planned keeps a plan per key and serves the
 * iteration by it, not by its first request sizes. */
NPUMEM_API npumem_status_t npumem_iteration_key(npumem_allocator_t* allocator,
                                                uint64_t key) NPUMEM_NOEXCEPT;
/* ---- Hooks and the size-pattern report ---- */

typedef enum npumem_event_kind {
  NPUMEM_EVENT_ALLOC = 0,         /* a block handed out */
  NPUMEM_EVENT_FREE = 1,          /* a block returned */
  NPUMEM_EVENT_SEGMENT_ALLOC = 2, /* memory obtained from the device */
  NPUMEM_EVENT_SEGMENT_FREE = 3,  /* memory returned to the device */
  NPUMEM_EVENT_MAP = 4,           /* physical granules mapped (expandable) */
  NPUMEM_EVENT_UNMAP = 5,         /* physical granules unmapped (expandable) */
  NPUMEM_EVENT_SPILL = 6,         /* an allocation served by DDR because HBM could not */
  NPUMEM_EVENT_RECLAIM = 7,       /* cached memory released to satisfy a request */
  NPUMEM_EVENT_OOM = 8,           /* an allocation failed */
  NPUMEM_EVENT_ITERATION = 9      /* npumem_iteration */
} npumem_event_kind_t;

typedef struct npumem_event {
  npumem_event_kind_t kind;
  uint64_t address;
  uint64_t bytes;           /* block, segment or released bytes */
  uint64_t requested_bytes; /* alloc, free, oom: what the caller asked for */
  int tier;                 /* 0 HBM, 1 DDR */
  const char* pool;         /* valid during the call only */
  const char* tag;          /* valid during the call only; "" when untagged */
} npumem_event_t;

typedef void (*npumem_hook_t)(const npumem_event_t* event, void* user_data);

/* Calls hook(event, user_data) for every event whose bit (1u << kind) is set in kinds,
 * in the allocating thread under the allocator's lock: keep it quick and do not call
 * the allocator from it. *id (may be NULL) is for npumem_remove_hook. kinds of 0, or with
 * a bit above NPUMEM_EVENT_ITERATION's, is INVALID_ARGUMENT. */
NPUMEM_API npumem_status_t npumem_add_hook(npumem_allocator_t* allocator, uint32_t kinds,
                                           npumem_hook_t hook, void* user_data,
                                           uint64_t* id) NPUMEM_NOEXCEPT;
/* An id no hook of this allocator has is INVALID_ARGUMENT. */
NPUMEM_API npumem_status_t npumem_remove_hook(npumem_allocator_t* allocator,
                                              uint64_t id) NPUMEM_NOEXCEPT;
/* Starts counting the requested sizes (iterations end at npumem_iteration); a second
 * call changes nothing. */
NPUMEM_API npumem_status_t npumem_size_patterns_start(npumem_allocator_t* allocator)
    NPUMEM_NOEXCEPT;
/* The size-pattern report since npumem_size_patterns_start (a histogram, the most
 * frequent sizes, how much each iteration repeats the one before); INVALID_ARGUMENT
 * before it. Free *out with npumem_string_free(). */
NPUMEM_API npumem_status_t npumem_size_patterns(npumem_allocator_t* allocator,
                                                char** out) NPUMEM_NOEXCEPT;

/* Starts a leak check (npumem/leak_detector.h, as `npumem run` makes): from now on, the
 * allocations each iteration (npumem_iteration) leaves alive are grouped by tag
 * (npumem_set_tag), pool and, with backtraces nonzero, the allocating stack. The first
 * warmup_iterations are not judged (they make what legitimately stays: optimizer
 * state, caches); survivors of half the judged iterations or more, above threshold x
 * the allocated bytes when judging starts (0: any), are a leak. A second call starts
 * over. While it runs every allocation is watched, which costs the lone thread's fast
 * path. INVALID_ARGUMENT for a negative threshold. */
NPUMEM_API npumem_status_t npumem_leak_check_start(npumem_allocator_t* allocator, double threshold,
                                                   size_t warmup_iterations,
                                                   int backtraces) NPUMEM_NOEXCEPT;
/* The leak report since npumem_leak_check_start: baseline, final, growth, the verdict
 * and the groups of survivors, most bytes first; *leaking (may be NULL) 1 when it finds
 * a leak. INVALID_ARGUMENT before npumem_leak_check_start. Free *out with
 * npumem_string_free(). */
NPUMEM_API npumem_status_t npumem_leak_report(npumem_allocator_t* allocator, int* leaking,
                                              char** out) NPUMEM_NOEXCEPT;
/* Ends the leak check (INVALID_ARGUMENT when none runs): the fast path comes back. */
NPUMEM_API npumem_status_t npumem_leak_check_stop(npumem_allocator_t* allocator) NPUMEM_NOEXCEPT;

/* The allocator's snapshot as JSON: device, stats, pools, segments with their blocks
 * (write_snapshot_json of npumem/snapshot.h; schema in docs/OBSERVABILITY.md). Free
 * *out with npumem_string_free(). */
NPUMEM_API npumem_status_t npumem_snapshot_json(npumem_allocator_t* allocator,
                                                char** out) NPUMEM_NOEXCEPT;
/* As npumem_create_pool, pinned to a tier: its allocations come only from that tier
 * and never spill (NPUMEM_TIER_ANY: not pinned). INVALID_CONFIG when the device lacks
 * that tier or the name exists already. */
NPUMEM_API npumem_status_t npumem_create_tier_pool(npumem_allocator_t* allocator, const char* name,
                                                   size_t quota_bytes,
                                                   npumem_tier_t tier) NPUMEM_NOEXCEPT;
/* As npumem_allocate, from the named pool (INVALID_CONFIG for an unknown pool). */
NPUMEM_API npumem_status_t npumem_pool_allocate(npumem_allocator_t* allocator, const char* pool,
                                                size_t size, void** out) NPUMEM_NOEXCEPT;
/* Copies bytes between two live allocations of the allocator (the addresses it
 * returned; bytes at most either's size) on the device; seconds (may be NULL) gets the
 * transfer time of the device's bandwidth model. The statistics count it per
 * direction ("copy_bytes.ddr_to_hbm", "copy_modelled_ns.ddr_to_hbm", ...). */
NPUMEM_API npumem_status_t npumem_copy(npumem_allocator_t* allocator, void* dst, const void* src,
                                       size_t bytes, double* seconds) NPUMEM_NOEXCEPT;

/* Problems met that did not stop the allocator: when it was made (e.g. "expandable_segments
 * feature is not supported by device ..."), and a pool quota not in whole granules; one per
 * line, each ending in '\n'; "" when none. Free *out with npumem_string_free(). */
NPUMEM_API npumem_status_t npumem_warnings(npumem_allocator_t* allocator,
                                           char** out) NPUMEM_NOEXCEPT;
/* Frees a string this library returned; NULL is a no-op. */
NPUMEM_API void npumem_string_free(char* text) NPUMEM_NOEXCEPT;

#ifdef __cplusplus
}
#endif

#endif /* NPUMEM_NPUMEM_H */
