#pragma once
// What makes a step cheap on a GPU, kept out of the training code's way: a fused step
// replayed as one CUDA graph, and the units of a mixed pack stepped on separate CUDA
// streams. Both compile to plain eager code without a CUDA LibTorch (PACKTUNE_WITH_CUDA) and
// on CPU tensors, so callers need no #if of their own.
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include <torch/torch.h>

namespace packtune::actors {

// False when PACKTUNE_CUDA_GRAPHS=0 is set: every fused step then runs eagerly (to debug or
// compare; the results are the same).
bool cuda_graphs_enabled();

// Makes `device` the calling thread's current CUDA device (nothing for a CPU device). An actor
// on cuda:N calls it once: CUDA objects made without a device of their own (events, streams,
// the context) belong to the current device, which is otherwise device 0.
void make_current(const torch::Device& device);

// Creates the CUDA context of `device` and loads cuBLAS on a thread of its own, and returns at
// once: an actor reads and decodes its data set meanwhile instead of paying for both in turn
// (on an H200 an actor was ready 1.2 s after the driver's first line without this, 1.08 s with
// it). get() the future before the device is used; it rethrows what the warm-up threw. A CPU
// device gets a future that is ready.
std::future<void> warm_up(const torch::Device& device);

// Why this process stopped capturing CUDA graphs, once: the first capture that failed turns
// them off for every group (a failed capture can leave the caching allocator believing one is
// still under way), and the caller logs this. Empty while none failed, and after the first call
// that returned the reason.
std::string take_cuda_graph_failure();

// One training step captured as a CUDA graph and replayed. The step's body must touch only
// tensors that outlive the graph in place (parameters, gradients, optimizer state, loss
// sums), read its per-step data only from `inputs`, and do nothing on the host that has to
// happen every step: a replay runs the recorded kernels and nothing else. Whoever owns those
// tensors calls reset() when it replaces one of them (a member joins or leaves).
class StepGraph {
 public:
  StepGraph();
  ~StepGraph();
  StepGraph(const StepGraph&) = delete;
  StepGraph& operator=(const StepGraph&) = delete;

  // Eager steps on a side stream before the capture, as PyTorch's CUDA graph notes
  // prescribe: they create the gradients, cuBLAS's and cuDNN's workspaces and the
  // allocator's blocks, so that the capture allocates only what the step itself needs.
  static constexpr int kWarmupSteps = 3;

  using Body = std::function<void(const std::vector<torch::Tensor>& inputs)>;
  // One step: `body(inputs)` eagerly on the CPU, with graphs disabled, and for the first
  // warm-up steps after a reset (they allocate the gradients and the libraries' workspaces);
  // then captured once and replayed with `inputs` copied into the graph's own input tensors.
  // `clear_gradients` runs right before the capture: gradients freed there are allocated
  // again by the captured backward, in the graph's memory pool, where replays rewrite them.
  // A capture that fails leaves this and every other group of the process eager for good
  // (the reason is in last_error() and, once, in take_cuda_graph_failure()).
  void run(const std::vector<torch::Tensor>& inputs, const Body& body, const std::function<void()>& clear_gradients);
  void reset();
  bool captured() const;
  const std::string& last_error() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

// Steps the units of a mixed pack (fused groups and plain models) each on a CUDA stream of
// its own, so that the GPU overlaps their small kernels instead of running them one unit
// after another. Data the units share must be ready on the caller's stream before begin().
class UnitStreams {
 public:
  explicit UnitStreams(torch::Device device);
  ~UnitStreams();
  UnitStreams(const UnitStreams&) = delete;
  UnitStreams& operator=(const UnitStreams&) = delete;

  // Starts a round of `units` units: every unit's stream waits for the caller's stream.
  // With fewer than two units, or off CUDA, the round runs on the caller's stream.
  void begin(std::size_t units);
  // Runs `step` with unit `unit`'s stream current.
  void run(std::size_t unit, const std::function<void()>& step);
  // The caller's stream waits for every unit's work of the round.
  void end();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace packtune::actors
