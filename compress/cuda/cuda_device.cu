// CudaDevice: Device (device.h) over the CUDA runtime. Streams are created
// non-blocking (no implicit sync with the legacy default stream); events
// without timing. Every runtime error becomes std::runtime_error naming the
// call.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "compress/cuda/cuda_device.h"
#include "compress/cuda/cuda_executor.cuh"
#include "compress/cuda/device_codecs.h"
#include "compress/cuda/reduce_steps.h"

namespace cmpi::compress::cuda {
namespace {

void check(cudaError_t error, const char* call) {
  if (error != cudaSuccess)
    throw std::runtime_error(std::string("cuda: ") + call + ": " + cudaGetErrorString(error));
}

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(int ordinal) : ordinal_(ordinal) {
    check(cudaSetDevice(ordinal), "cudaSetDevice");
    check(cudaGetDeviceProperties(&properties_, ordinal), "cudaGetDeviceProperties");
    // The codecs' executors keep a pointer to this table: it must never move.
    streams_.reserve(kMaxStreams);
  }
  ~CudaDevice() override {
    cudaDeviceSynchronize();
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    for (cudaStream_t s : streams_) cudaStreamDestroy(s);
  }

  std::string description() const override {
    return std::string(properties_.name) + ", " + std::to_string(properties_.totalGlobalMem >> 20) +
           " MiB, sm_" + std::to_string(properties_.major) + std::to_string(properties_.minor);
  }
  void* allocate(size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  void release(void* p) override { check(cudaFree(p), "cudaFree"); }
  void* allocate_pinned(size_t bytes) override {
    void* p = nullptr;
    check(cudaMallocHost(&p, bytes), "cudaMallocHost");
    return p;
  }
  void release_pinned(void* p) override { check(cudaFreeHost(p), "cudaFreeHost"); }

  StreamId create_stream() override {
    if (streams_.size() == kMaxStreams)
      throw std::logic_error("cuda device: more than " + std::to_string(kMaxStreams) + " streams");
    cudaStream_t s;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    streams_.push_back(s);
    return StreamId(streams_.size() - 1);
  }
  EventId create_event() override {
    cudaEvent_t e;
    check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    events_.push_back(e);
    return EventId(events_.size() - 1);
  }
  void copy_to_host(void* host, const void* device, size_t bytes, StreamId s) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream(s)),
          "cudaMemcpyAsync D2H");
  }
  void copy_to_device(void* device, const void* host, size_t bytes, StreamId s) override {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, stream(s)),
          "cudaMemcpyAsync H2D");
  }
  void copy_on_device(void* to, const void* from, size_t bytes, StreamId s) override {
    check(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream(s)),
          "cudaMemcpyAsync D2D");
  }
  void fill(void* device, uint8_t value, size_t bytes, StreamId s) override {
    check(cudaMemsetAsync(device, value, bytes, stream(s)), "cudaMemsetAsync");
  }
  void add(float* acc, const float* x, uint64_t n, StreamId s) override {
    CudaExecutor(streams_.data()).for_each(s, n, AddInto{acc, x});
  }
  void record(EventId e, StreamId s) override {
    check(cudaEventRecord(event(e), stream(s)), "cudaEventRecord");
  }
  void wait(StreamId s, EventId e) override {
    check(cudaStreamWaitEvent(stream(s), event(e), 0), "cudaStreamWaitEvent");
  }
  bool query(EventId e) override {
    const cudaError_t status = cudaEventQuery(event(e));
    if (status == cudaErrorNotReady) return false;
    check(status, "cudaEventQuery");
    return true;
  }
  void synchronize_event(EventId e) override {
    check(cudaEventSynchronize(event(e)), "cudaEventSynchronize");
  }
  void synchronize_stream(StreamId s) override {
    check(cudaStreamSynchronize(stream(s)), "cudaStreamSynchronize");
  }
  std::unique_ptr<DeviceCodec> make_codec(const CodecSpec& spec) override {
    return make_device_codec(*this, CudaExecutor(streams_.data()), spec);
  }

 private:
  static constexpr size_t kMaxStreams = 64;
  cudaStream_t stream(StreamId s) const { return streams_.at(size_t(s)); }
  cudaEvent_t event(EventId e) const { return events_.at(size_t(e)); }

  int ordinal_;
  cudaDeviceProp properties_{};
  std::vector<cudaStream_t> streams_;
  std::vector<cudaEvent_t> events_;
};

}  // namespace

void check_launch(const char* what) {
  check(cudaGetLastError(), what);
}

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

std::string cuda_unavailable_reason() {
  int count = 0;
  const cudaError_t error = cudaGetDeviceCount(&count);
  if (error != cudaSuccess) return std::string("no CUDA device: ") + cudaGetErrorString(error);
  if (count == 0) return "no CUDA device: the runtime sees 0 devices";
  return "";
}

std::unique_ptr<Device> make_cuda_device(int ordinal) {
  return std::make_unique<CudaDevice>(ordinal);
}

}  // namespace cmpi::compress::cuda
