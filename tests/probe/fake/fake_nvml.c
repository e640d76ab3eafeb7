/* A fake libnvidia-ml.so.1 for tests: the NVML symbols envlock's probe calls, with the real
 * names and signatures (nvml.h), answering from fake_config.h. NVML lists every physical GPU;
 * it ignores CUDA_VISIBLE_DEVICES, as the real library does. */
#include "fake_config.h"

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct {
  unsigned long long total;
  unsigned long long free;
  unsigned long long used;
} nvmlMemory_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9

static int initialised = 0;

static int index_of(nvmlDevice_t device) { return (int)((size_t)device) - 1; }
static int valid(nvmlDevice_t device) {
  int i = index_of(device);
  return initialised && i >= 0 && i < fake_int("gpu.count", 0);
}

nvmlReturn_t nvmlInit_v2(void) {
  fake_misbehave("nvml", "nvmlInit_v2");
  nvmlReturn_t forced = (nvmlReturn_t)fake_int("nvml.init", 0);
  if (forced != NVML_SUCCESS) return forced;
  initialised = 1;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void) {
  initialised = 0;
  return NVML_SUCCESS;
}

const char* nvmlErrorString(nvmlReturn_t result) {
  switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case 18: return "Driver/library version mismatch";
    default: return "Unknown Error";
  }
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) {
  fake_misbehave("nvml", "nvmlSystemGetDriverVersion");
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  const char* value = fake_get("nvml.driver");
  if (value == NULL) value = "550.54.14";
  if (strlen(value) + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
  snprintf(version, length, "%s", value);
  return NVML_SUCCESS;
}

/* As documented, "retrieved from the shared library": the driver's cuDriverGetVersion unless
 * nvml.cuda_version says otherwise. */
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int* version) {
  fake_misbehave("nvml", "nvmlSystemGetCudaDriverVersion_v2");
  if (version == NULL) return NVML_ERROR_INVALID_ARGUMENT;
  *version = (int)fake_int("nvml.cuda_version", fake_int("cuda.driver_version", 12040));
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* count) {
  fake_misbehave("nvml", "nvmlDeviceGetCount_v2");
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  *count = (unsigned int)fake_int("gpu.count", 0);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) {
  if (!initialised) return NVML_ERROR_UNINITIALIZED;
  if ((long)index >= fake_int("gpu.count", 0)) return NVML_ERROR_INVALID_ARGUMENT;
  *device = (nvmlDevice_t)(size_t)(index + 1);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) {
  fake_misbehave("nvml", "nvmlDeviceGetName");
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const char* value = fake_gpu(index_of(device), "name");
  snprintf(name, length, "%s", value != NULL ? value : "NVIDIA Fake GPU");
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const char* value = fake_gpu(index_of(device), "uuid");
  if (value == NULL) return NVML_ERROR_NOT_SUPPORTED;
  snprintf(uuid, length, "%s", value);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const char* value = fake_gpu(index_of(device), "memory");
  memory->total = value != NULL ? strtoull(value, NULL, 10) : 0ULL;
  memory->used = 0;
  memory->free = memory->total;
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int* major, int* minor) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const char* cc = fake_gpu(index_of(device), "cc");
  *major = 8;
  *minor = 0;
  if (cc != NULL) sscanf(cc, "%d.%d", major, minor);
  return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* current, unsigned int* pending) {
  if (!valid(device)) return NVML_ERROR_INVALID_ARGUMENT;
  const char* mig = fake_gpu(index_of(device), "mig");
  if (mig == NULL) return NVML_ERROR_NOT_SUPPORTED;
  *current = (unsigned int)atoi(mig);
  *pending = *current;
  return NVML_SUCCESS;
}
