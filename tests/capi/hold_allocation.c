/* A C program on libnpumem.so for the tests that look at running processes (npumem
 * smi): allocates BYTES on device 0 with npumem_malloc, prints "ready", holds the
 * memory until its standard input closes, then frees it. */
#include <stdio.h>
#include <stdlib.h>

#include "npumem/npumem.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s BYTES\n", argv[0]);
    return 2;
  }
  const long bytes = strtol(argv[1], NULL, 10);
  void* memory = npumem_malloc(bytes, 0, NULL);
  if (memory == NULL) {
    fprintf(stderr, "npumem_malloc: %s\n", npumem_last_error());
    return 1;
  }
  printf("ready\n");
  fflush(stdout);
  while (getchar() != EOF) {
  }
  npumem_free(memory, bytes, 0, NULL);
  return 0;
}
