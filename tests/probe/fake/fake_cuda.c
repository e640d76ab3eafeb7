/* A fake libcuda.so.1 for tests: the CUDA driver API symbols envlock's probe calls, with the
 * real names and signatures (cuda.h, CUDA 12), answering from fake_config.h.
 *
 * Built three ways (tests/probe/CMakeLists.txt): the driver's own library (keys `cuda.*`), a
 * half-installed one without cuDriverGetVersion (FAKE_PARTIAL), and a CUDA forward-compatibility
 * library as the cuda-compat package installs in /usr/local/cuda-X.Y/compat (FAKE_COMPAT, keys
 * `compat.*`: compat.driver_version defaults to 12080; compat.init=803 or 804 makes cuInit fail
 * as the real one does on an unsupported kernel driver or a GPU without forward compatibility). */
#include "fake_config.h"

#ifdef FAKE_COMPAT
#define FAKE_PREFIX "compat"
#define FAKE_DEFAULT_VERSION 12080
#else
#define FAKE_PREFIX "cuda"
#define FAKE_DEFAULT_VERSION 12040
#endif

typedef int CUresult;
typedef int CUdevice;

#define CUDA_SUCCESS 0
#define CUDA_ERROR_INVALID_VALUE 1
#define CUDA_ERROR_NOT_INITIALIZED 3
#define CUDA_ERROR_NO_DEVICE 100
#define CUDA_ERROR_INVALID_DEVICE 101
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

static int visible[64];
static int visible_count = 0;
static int initialised = 0;

/* CUDA_VISIBLE_DEVICES: indices or UUIDs ("GPU-..." prefixes); parsing stops at the first
 * entry that matches nothing, as the real driver does. */
static void compute_visible(void) {
  int count = (int)fake_int("gpu.count", 0);
  const char* env = getenv("CUDA_VISIBLE_DEVICES");
  visible_count = 0;
  if (env == NULL) {
    for (int i = 0; i < count && i < 64; ++i) visible[visible_count++] = i;
    return;
  }
  char buffer[256];
  snprintf(buffer, sizeof buffer, "%s", env);
  for (char* token = strtok(buffer, ","); token != NULL; token = strtok(NULL, ",")) {
    int found = -1;
    if (token[0] >= '0' && token[0] <= '9') {
      int i = atoi(token);
      if (i < count) found = i;
    } else {
      /* GPU-<uuid> prefixes, and MIG-<uuid> names of the MIG instance a GPU holds. */
      for (int i = 0; i < count; ++i) {
        const char* uuid = fake_gpu(i, strncmp(token, "MIG-", 4) == 0 ? "mig_uuid" : "uuid");
        if (uuid != NULL && strncmp(uuid, token, strlen(token)) == 0) found = i;
      }
    }
    if (found < 0 || visible_count >= 64) break;
    visible[visible_count++] = found;
  }
}

CUresult cuInit(unsigned int flags) {
  (void)flags;
  fake_misbehave(FAKE_PREFIX, "cuInit");
  /* cuda.helper=1: start a helper process that inherits every descriptor and lingers, as a
   * driver library's helpers may. */
  if (fake_int("cuda.helper", 0) == 1 && fork() == 0) {
    for (;;) pause();
  }
  compute_visible();
  const char* forced = fake_get(FAKE_PREFIX ".init");
  if (forced != NULL && atoi(forced) != 0) return atoi(forced);
  if (visible_count == 0) return CUDA_ERROR_NO_DEVICE;
  initialised = 1;
  return CUDA_SUCCESS;
}

#ifndef FAKE_PARTIAL
/* The "half-installed driver" variant (FAKE_PARTIAL) lacks this symbol. */
CUresult cuDriverGetVersion(int* version) {
  fake_misbehave(FAKE_PREFIX, "cuDriverGetVersion");
  if (version == NULL) return CUDA_ERROR_INVALID_VALUE;
  *version = (int)fake_int(FAKE_PREFIX ".driver_version", FAKE_DEFAULT_VERSION);
  return CUDA_SUCCESS;
}
#endif

CUresult cuDeviceGetCount(int* count) {
  fake_misbehave(FAKE_PREFIX, "cuDeviceGetCount");
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  *count = visible_count;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (!initialised) return CUDA_ERROR_NOT_INITIALIZED;
  if (ordinal < 0 || ordinal >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char* name, int len, CUdevice device) {
  fake_misbehave(FAKE_PREFIX, "cuDeviceGetName");
  if (device < 0 || device >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  const char* value = fake_gpu(visible[device], "name");
  snprintf(name, (size_t)len, "%s", value != NULL ? value : "NVIDIA Fake GPU");
  return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int* out, int attribute, CUdevice device) {
  if (device < 0 || device >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  const char* cc = fake_gpu(visible[device], "cc");
  int major = 8, minor = 0;
  if (cc != NULL) sscanf(cc, "%d.%d", &major, &minor);
  if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) *out = major;
  else if (attribute == CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR) *out = minor;
  else return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (device < 0 || device >= visible_count) return CUDA_ERROR_INVALID_DEVICE;
  const char* memory = fake_gpu(visible[device], "memory");
  *bytes = memory != NULL ? (size_t)strtoull(memory, NULL, 10) : (size_t)0;
  return CUDA_SUCCESS;
}

CUresult cuGetErrorName(CUresult error, const char** name) {
  switch (error) {
    case 0: *name = "CUDA_SUCCESS"; return CUDA_SUCCESS;
    case 100: *name = "CUDA_ERROR_NO_DEVICE"; return CUDA_SUCCESS;
    case 101: *name = "CUDA_ERROR_INVALID_DEVICE"; return CUDA_SUCCESS;
    case 803: *name = "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH"; return CUDA_SUCCESS;
    case 804: *name = "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE"; return CUDA_SUCCESS;
    case 999: *name = "CUDA_ERROR_UNKNOWN"; return CUDA_SUCCESS;
    default: *name = NULL; return CUDA_ERROR_INVALID_VALUE;
  }
}
