#include "actors/cuda_step.hpp"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#ifdef PACKTUNE_WITH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cuda_runtime_api.h>
#endif

namespace packtune::actors {

bool cuda_graphs_enabled() {
  static const bool enabled = [] {
    const char* value = std::getenv("PACKTUNE_CUDA_GRAPHS");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

namespace {

struct GraphFailure {
  std::atomic<bool> happened{false};
  std::mutex mutex;
  std::string reason;  // until taken
};

GraphFailure& graph_failure() {
  static GraphFailure failure;
  return failure;
}

[[maybe_unused]] void record_graph_failure(const std::string& reason) {
  auto& f = graph_failure();
  if (f.happened.exchange(true)) return;
  std::lock_guard<std::mutex> lock(f.mutex);
  f.reason = reason;
}

}  // namespace

std::future<void> warm_up(const torch::Device& device) {
  if (!device.is_cuda()) {
    std::promise<void> done;
    done.set_value();
    return done.get_future();
  }
  return std::async(std::launch::async, [device] {
    make_current(device);  // a thread's current device is its own
    const auto a = torch::ones({8, 8}, torch::TensorOptions().device(device));
    (void)torch::mm(a, a);  // loads cuBLAS's kernels; nothing waits for the product
  });
}

std::string take_cuda_graph_failure() {
  auto& f = graph_failure();
  if (!f.happened.load()) return {};
  std::lock_guard<std::mutex> lock(f.mutex);
  return std::exchange(f.reason, std::string());
}

#ifdef PACKTUNE_WITH_CUDA
// Named, not anonymous: UnitStreams::State holds Events, and a unity build (the engine compiles
// as two unity files) warns about a type with linkage holding one from an anonymous namespace.
namespace cuda_events {

// A CUDA event made once and recorded again each time: the streams of a pack wait on each
// other every round, too often to create an event per wait. Raw events: their API is the
// same in every LibTorch 2.x, unlike ATen's event wrappers.
class Event {
 public:
  // Made on the device of the streams it joins: recording an event on another device's stream
  // fails (cudaErrorInvalidResourceHandle).
  explicit Event(c10::DeviceIndex device) {
    c10::cuda::CUDAGuard guard(device);
    C10_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~Event() { cudaEventDestroy(event_); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  // Marks the work `stream` has queued so far.
  void record(const c10::cuda::CUDAStream& stream) { C10_CUDA_CHECK(cudaEventRecord(event_, stream.stream())); }
  // `stream` starts nothing more until the recorded work has finished.
  void block(const c10::cuda::CUDAStream& stream) const {
    C10_CUDA_CHECK(cudaStreamWaitEvent(stream.stream(), event_, 0));
  }

 private:
  cudaEvent_t event_{};
};

// A stream of our own rather than one of the pool's, which hands its 32 streams per device to
// every caller in turn: a captured graph keeps cuBLAS's workspace of its capture stream, and a
// stream shared with another graph or with eager work would share that workspace too (and
// LibTorch 2.11 frees a stream's workspace when a graph captured on it is destroyed).
class OwnStream {
 public:
  explicit OwnStream(c10::DeviceIndex device) : device_(device) {
    c10::cuda::CUDAGuard guard(device);
    C10_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  }
  ~OwnStream() {
    c10::cuda::CUDAGuard guard(device_);
    cudaStreamSynchronize(stream_);  // nothing queued on it may outlive it
    cudaStreamDestroy(stream_);
  }
  OwnStream(const OwnStream&) = delete;
  OwnStream& operator=(const OwnStream&) = delete;
  c10::cuda::CUDAStream get() const { return c10::cuda::getStreamFromExternal(stream_, device_); }

 private:
  c10::DeviceIndex device_;
  cudaStream_t stream_{};
};

void wait_for(const c10::cuda::CUDAStream& waiter, const c10::cuda::CUDAStream& done) {
  if (waiter == done) return;
  Event event(done.device_index());
  event.record(done);
  event.block(waiter);  // the wait holds on to what was recorded; the event may go
}

}  // namespace cuda_events
using cuda_events::Event;
using cuda_events::OwnStream;
using cuda_events::wait_for;

void make_current(const torch::Device& device) {
  if (device.is_cuda() && device.has_index()) c10::cuda::set_device(device.index());
}

struct StepGraph::State {
  std::unique_ptr<OwnStream> stream;  // declared first: it outlives the graph captured on it
  std::unique_ptr<at::cuda::CUDAGraph> graph;
  std::vector<torch::Tensor> inputs;  // the graph's own: replays read these addresses
  int warmups = 0;
  bool failed = false;
  std::string error;
};

StepGraph::StepGraph() : state_(std::make_unique<State>()) {}
StepGraph::~StepGraph() = default;

void StepGraph::reset() {
  state_->graph.reset();
  state_->inputs.clear();
  state_->warmups = 0;
}

bool StepGraph::captured() const { return state_->graph != nullptr; }
const std::string& StepGraph::last_error() const { return state_->error; }

void StepGraph::run(const std::vector<torch::Tensor>& inputs, const Body& body,
                    const std::function<void()>& clear_gradients) {
  auto& s = *state_;
  if (inputs.empty() || !inputs.front().is_cuda() || !cuda_graphs_enabled() || s.failed ||
      graph_failure().happened.load()) {
    body(inputs);
    return;
  }
  if (s.graph) {
    for (std::size_t i = 0; i < inputs.size(); ++i) s.inputs[i].copy_(inputs[i], /*non_blocking=*/true);
    s.graph->replay();
    return;
  }
  const auto device = inputs.front().device().index();
  auto caller = c10::cuda::getCurrentCUDAStream(device);
  if (!s.stream) s.stream = std::make_unique<OwnStream>(device);
  auto side = s.stream->get();
  wait_for(side, caller);
  if (s.warmups < kWarmupSteps) {
    {
      c10::cuda::CUDAStreamGuard guard(side);
      body(inputs);
    }
    wait_for(caller, side);
    ++s.warmups;
    return;
  }
  {
    c10::cuda::CUDAStreamGuard guard(side);
    for (const auto& t : inputs) s.inputs.push_back(t.clone());
    clear_gradients();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    try {
      graph->capture_begin();
      try {
        body(s.inputs);
      } catch (...) {
        try {
          graph->capture_end();  // leaves the stream out of capture mode; the graph is void
        } catch (...) {
        }
        throw;
      }
      graph->capture_end();
      s.graph = std::move(graph);
    } catch (const std::exception& e) {
      // Some op could not be captured: this group steps eagerly from now on, correctly, and so
      // does every other (the allocator may still count this capture as under way).
      s.failed = true;
      s.error = e.what();
      record_graph_failure(s.error);
      s.inputs.clear();
      clear_gradients();  // whatever the void capture left in them was never computed
    }
  }
  wait_for(caller, side);
  // A capture records the step without running it: this step runs now.
  if (s.graph) {
    s.graph->replay();
  } else {
    body(inputs);
  }
}

struct UnitStreams::State {
  torch::Device device;
  bool active = false;
  std::size_t used = 0;
  std::vector<std::unique_ptr<OwnStream>> streams;
  std::optional<c10::cuda::CUDAStream> caller;
  std::unique_ptr<Event> ready;               // the caller's work before the round
  std::vector<std::unique_ptr<Event>> done;   // each unit stream's work of the round
};

UnitStreams::UnitStreams(torch::Device device) : state_(new State{device}) {}
UnitStreams::~UnitStreams() = default;

void UnitStreams::begin(std::size_t units) {
  auto& s = *state_;
  s.active = s.device.is_cuda() && units >= 2;
  if (!s.active) return;
  const auto index = s.device.has_index() ? s.device.index() : c10::cuda::current_device();
  s.caller = c10::cuda::getCurrentCUDAStream(index);
  while (s.streams.size() < units) {
    s.streams.push_back(std::make_unique<OwnStream>(index));
    s.done.push_back(std::make_unique<Event>(index));
  }
  if (!s.ready) s.ready = std::make_unique<Event>(index);
  s.used = units;
  s.ready->record(*s.caller);
  for (std::size_t i = 0; i < units; ++i) s.ready->block(s.streams[i]->get());
}

void UnitStreams::run(std::size_t unit, const std::function<void()>& step) {
  auto& s = *state_;
  if (!s.active || unit >= s.used) {
    step();
    return;
  }
  c10::cuda::CUDAStreamGuard guard(s.streams[unit]->get());
  step();
}

void UnitStreams::end() {
  auto& s = *state_;
  if (!s.active) return;
  for (std::size_t i = 0; i < s.used; ++i) {
    s.done[i]->record(s.streams[i]->get());
    s.done[i]->block(*s.caller);
  }
  s.active = false;
}

#else  // LibTorch without CUDA: every step is eager, on the one stream there is.

void make_current(const torch::Device&) {}

struct StepGraph::State {
  std::string error;
};

StepGraph::StepGraph() : state_(std::make_unique<State>()) {}
StepGraph::~StepGraph() = default;
void StepGraph::reset() {}
bool StepGraph::captured() const { return false; }
const std::string& StepGraph::last_error() const { return state_->error; }
void StepGraph::run(const std::vector<torch::Tensor>& inputs, const Body& body, const std::function<void()>&) {
  body(inputs);
}

struct UnitStreams::State {};
UnitStreams::UnitStreams(torch::Device) : state_(std::make_unique<State>()) {}
UnitStreams::~UnitStreams() = default;
void UnitStreams::begin(std::size_t) {}
void UnitStreams::run(std::size_t, const std::function<void()>& step) { step(); }
void UnitStreams::end() {}

#endif

}  // namespace packtune::actors
