/* npumem through its C ABI: an allocator on a virtual NPU with 1 GiB of HBM, three
 * allocations, the stats, a request the device cannot serve, and a snapshot. */
#include <npumem/npumem.h>
#include <stdio.h>
#include <string.h>

#define MIB ((size_t)1 << 20)

static int succeeded(npumem_status_t status, const char* what) {
  if (status == NPUMEM_OK) return 1;
  fprintf(stderr, "c_consumer: %s failed: %s: %s\n", what, npumem_status_name(status),
          npumem_last_error());
  return 0;
}

static int print_stats(npumem_allocator_t* allocator, const char* when) {
  npumem_stats_t stats;
  int64_t peak_allocations = 0;
  if (!succeeded(npumem_stats(allocator, &stats), "npumem_stats") ||
      !succeeded(npumem_stat(allocator, "allocation.all.peak", &peak_allocations), "npumem_stat")) {
    return 0;
  }
  printf("%s: allocated_bytes %lld, allocations %lld, peak allocations %lld\n", when,
         (long long)stats.allocated_bytes, (long long)stats.allocations,
         (long long)peak_allocations);
  printf("%s: reserved_bytes %lld (%s allocated_bytes)\n", when, (long long)stats.reserved_bytes,
         stats.reserved_bytes >= stats.allocated_bytes ? "covers" : "BELOW");
  return 1;
}

int main(void) {
  const size_t sizes[3] = {1 * MIB, 8 * MIB, 64 * MIB};
  void* blocks[3] = {NULL, NULL, NULL};
  npumem_allocator_t* allocator = NULL;
  void* too_big = NULL;
  char* snapshot = NULL;
  npumem_status_t status;
  int i;

  printf("npumem %s\n", npumem_version());
  if (!succeeded(npumem_allocator_create("sim:hbm=1GiB,ddr=0", NULL, &allocator), "create")) {
    return 1;
  }
  for (i = 0; i < 3; ++i) {
    if (!succeeded(npumem_allocate(allocator, sizes[i], &blocks[i]), "npumem_allocate")) return 1;
  }
  if (!print_stats(allocator, "live")) return 1;

  status = npumem_allocate(allocator, 2048 * MIB, &too_big);
  printf("2 GiB request: %s\n", npumem_status_name(status));
  if (status != NPUMEM_OUT_OF_MEMORY) return 1;

  if (!succeeded(npumem_snapshot_json(allocator, &snapshot), "npumem_snapshot_json")) return 1;
  printf("snapshot: %s\n", strstr(snapshot, "\"segments\":[{") != NULL ? "segments" : "empty");
  npumem_string_free(snapshot);

  for (i = 0; i < 3; ++i) {
    if (!succeeded(npumem_deallocate(allocator, blocks[i]), "npumem_deallocate")) return 1;
  }
  status = npumem_deallocate(allocator, blocks[0]);
  printf("second free: %s\n", npumem_status_name(status));
  if (!print_stats(allocator, "freed")) return 1;
  if (!succeeded(npumem_allocator_destroy(allocator), "destroy")) return 1;
  printf("c_consumer: ok\n");
  return 0;
}
