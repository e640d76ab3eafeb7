/* fake_config.h — the answers of the fake NVIDIA libraries, programmed by each test.
 *
 * Both fake libraries read the key=value file named by ENVLOCK_FAKE_GPU_CONFIG (one key per
 * line, '#' starts a comment). Keys (all optional):
 *   gpu.count=N                 physical GPUs (default 0)
 *   gpu.<i>.name=NVIDIA H100    gpu.<i>.uuid=GPU-...   gpu.<i>.cc=9.0   gpu.<i>.memory=<bytes>
 *   gpu.<i>.mig=0|1             MIG mode (current and pending); absent: NVML says "not supported"
 *   cuda.init=<CUresult>        what cuInit returns (default 0, or 100 when no GPU is visible)
 *   cuda.driver_version=12040   what cuDriverGetVersion reports (default 12040)
 *   cuda.crash=<function>       that function dereferences NULL (SIGSEGV), e.g. cuInit
 *   cuda.hang=<function>        that function never returns
 *   cuda.helper=1               cuInit leaves a helper process holding every descriptor
 *   gpu.<i>.mig_uuid=MIG-...    the MIG instance CUDA_VISIBLE_DEVICES=MIG-... selects
 *   compat.init, compat.driver_version, compat.crash, compat.hang: the same for the
 *                               forward-compatibility build (FAKE_COMPAT, default version 12080)
 *   nvml.init=<nvmlReturn_t>    what nvmlInit_v2 returns (default 0)
 *   nvml.driver=550.54.14       nvmlSystemGetDriverVersion
 *   nvml.cuda_version=12040     nvmlSystemGetCudaDriverVersion_v2 (default cuda.driver_version)
 *   nvml.crash=<function>, nvml.hang=<function>
 * Like the real libcuda, the fake honours CUDA_VISIBLE_DEVICES (indices, GPU- UUID prefixes,
 * MIG- instance UUIDs; the list ends at the first entry naming no device, so an empty value or
 * -1 hides every GPU, and cuInit then returns CUDA_ERROR_NO_DEVICE). */
#ifndef ENVLOCK_FAKE_CONFIG_H
#define ENVLOCK_FAKE_CONFIG_H

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fake_keys[128][64];
static char fake_values[128][128];
static int fake_n = -1;

static void fake_load(void) {
  if (fake_n >= 0) return;
  fake_n = 0;
  const char* path = getenv("ENVLOCK_FAKE_GPU_CONFIG");
  if (path == NULL) return;
  FILE* f = fopen(path, "r");
  if (f == NULL) return;
  char line[256];
  while (fake_n < 128 && fgets(line, sizeof line, f) != NULL) {
    char* eq = strchr(line, '=');
    if (line[0] == '#' || eq == NULL) continue;
    *eq = '\0';
    char* value = eq + 1;
    value[strcspn(value, "\r\n")] = '\0';
    snprintf(fake_keys[fake_n], sizeof fake_keys[0], "%.63s", line);
    snprintf(fake_values[fake_n], sizeof fake_values[0], "%.127s", value);
    ++fake_n;
  }
  fclose(f);
}

static const char* fake_get(const char* key) {
  fake_load();
  for (int i = 0; i < fake_n; ++i)
    if (strcmp(fake_keys[i], key) == 0) return fake_values[i];
  return NULL;
}

static const char* fake_gpu(int index, const char* field) {
  char key[64];
  snprintf(key, sizeof key, "gpu.%d.%s", index, field);
  return fake_get(key);
}

static long fake_int(const char* key, long fallback) {
  const char* v = fake_get(key);
  return v != NULL ? strtol(v, NULL, 10) : fallback;
}

/* Crashes or hangs when `prefix`.crash / `prefix`.hang names `function`. */
static void fake_misbehave(const char* prefix, const char* function) {
  char key[64];
  snprintf(key, sizeof key, "%s.crash", prefix);
  const char* crash = fake_get(key);
  if (crash != NULL && strcmp(crash, function) == 0) {
    volatile int* null_pointer = NULL;
    *null_pointer = 1;
    raise(SIGSEGV);
  }
  snprintf(key, sizeof key, "%s.hang", prefix);
  const char* hang = fake_get(key);
  if (hang != NULL && strcmp(hang, function) == 0) {
    for (;;) pause();
  }
}

#endif
