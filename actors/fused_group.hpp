#pragma once
// Trials of one layer sequence and batch size trained as ONE model (HFTA's horizontal
// fusion). Every parameter is stacked with a leading member dimension K:
//   Linear    [K, in, out] weights, one baddbmm for all members
//   Conv2d    [K, out, C, kh, kw] weights, one grouped convolution (groups = K) over
//             channel-stacked inputs
//   BatchNorm one BatchNorm over K*C channels (statistics stay per member and channel)
// Each member reads its own batch of the shared stream at its own step, so members may join
// and leave at any step boundary. The loss is the sum of the members' mean losses, so each
// member's gradient is its solo gradient.
//
// Members may differ in width (MLP width, CNN channels and fc width) and optimizer. The
// stacked tensors take the widest member's shape; a narrower member's slice is padded at
// the end of every dimension with zeros that stay exactly zero: their gradients are masked
// before each step, so weight decay, momentum and Adam state never touch them. A padded
// unit computes act(0), which may not be 0 (sigmoid), but the next layer's weights from it
// are padding too, so each member's outputs are its solo outputs. Padded BatchNorm channels
// see all-zero inputs and have zero scale and shift. The group grows when a wider member
// joins and shrinks back to the widest remaining member when one leaves.
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

#include "actors/classifier.hpp"
#include "actors/cuda_step.hpp"
#include "actors/fused_optimizer.hpp"
#include "actors/trial_runner.hpp"
#include "datasets/batch_stream.hpp"

namespace packtune::actors {


class FusedGroup {
 public:
  FusedGroup(const TrialSpec& spec, const InputShape& input, torch::Device device);

  const std::string& key() const { return key_; }
  int size() const { return static_cast<int>(members_.size()); }
  bool contains(tuners::TrialId trial) const;

  // A new member, initialised exactly as it would be alone, at step 0; or, with `resume`,
  // continuing from that checkpoint at its step with its optimizer state. Throws
  // InputError when the checkpoint does not fit this group's architecture or optimizer.
  void add(tuners::TrialId trial, const TrialSpec& spec, std::uint64_t seed,
           const TrialCheckpoint* resume = nullptr);
  void remove(tuners::TrialId trial);

  // Decodes the batches the next train_step() reads (they are cached for the round).
  void prefetch(datasets::BatchStream& stream) const;
  // One optimizer step for every member, each on its own next batch. On a GPU, after a few
  // steps with the same members, the step is replayed as one CUDA graph.
  void train_step(datasets::BatchStream& stream);
  bool graph_captured() const { return graph_.captured(); }
  // Validation metrics for every member, and each one's train_loss since its last call.
  std::map<tuners::TrialId, Metrics> evaluate(const datasets::BatchStream& stream,
                                              const std::vector<tuners::TrialId>& which);

  std::int64_t step_of(tuners::TrialId trial) const;
  // A member's parameters and buffers under its solo state-dict names, unfused, on the
  // device: what a checkpoint of that trial holds.
  std::vector<std::pair<std::string, torch::Tensor>> member_state(tuners::TrialId trial) const;
  // Host copies of a member's tensors and optimizer state, under its solo names.
  void capture(tuners::TrialId trial, TrialCheckpoint& checkpoint) const;

 private:
  enum class Op { Linear, Conv, BatchNorm, Relu, Tanh, Gelu, Sigmoid, Pool, Flatten, Dropout };
  struct Layer {
    Op op;
    std::string name;        // the solo Sequential's child name ("0", "1", ...)
    int param = -1;          // index of the weight in params_
    bool bias = false;       // the bias follows the weight in params_
    int buffer = -1;         // BatchNorm: index of running_mean in buffers_ (var follows)
    std::int64_t padding = 0;
    std::int64_t dropout_index = -1;
  };
  // A stacked parameter's solo name, and how a member's slice differs from the solo tensor:
  // Linear weights are stored transposed ([in, out]), Linear biases as [1, out].
  struct ParamInfo {
    std::string name;
    bool linear_weight = false;
    bool linear_bias = false;
  };
  using Shape = std::vector<std::int64_t>;
  struct Member {
    tuners::TrialId trial;
    TrialSpec spec;
    std::uint64_t seed;
    std::int64_t step = 0;
    std::vector<Shape> param_shapes;   // its own, unpadded, in member layout, without K
    std::vector<Shape> buffer_shapes;
  };

  torch::Tensor forward(torch::Tensor x, const std::vector<torch::Tensor>& masks, bool training);
  // The device's part of a step on inputs [x, y, dropout masks...]: what a CUDA graph holds.
  void device_step(const std::vector<torch::Tensor>& inputs);
  std::vector<torch::Tensor> dropout_masks(std::int64_t batch);
  std::int64_t index_of(tuners::TrialId trial) const;
  torch::Tensor to_member_layout(std::size_t param, const torch::Tensor& solo) const;
  torch::Tensor to_solo_layout(std::size_t param, const torch::Tensor& member) const;
  // Member k's parameters and buffers under solo names, as views (no copies).
  std::vector<std::pair<std::string, torch::Tensor>> member_views(std::int64_t k) const;
  // [K, ...] shapes that hold every member (the element-wise largest), for `members`.
  static std::vector<Shape> widest(const std::vector<Member>& members, bool buffers);
  // Cuts or pads the stacked parameters, buffers and optimizer state to the members' widest
  // shapes, and rebuilds the padding masks. Called whenever the membership changed.
  void fit_members();

  std::string key_;
  InputShape input_;
  torch::Device device_;
  std::vector<Layer> layers_;
  std::vector<int> dropout_params_;  // per dropout layer: the preceding Linear's weight
  std::vector<torch::Tensor> params_;   // [K, ...] leaves with requires_grad
  // Per parameter: true on padding, a [K, ...] bool tensor; undefined where no member is
  // padded, so a group of equal widths pays nothing for it.
  std::vector<torch::Tensor> padding_;
  std::vector<ParamInfo> param_info_;   // one per entry of params_
  std::vector<torch::Tensor> buffers_;  // [K, C] running statistics
  std::vector<Member> members_;
  FusedOptimizer optimizer_;
  torch::Tensor loss_sum_;              // [K] since each member's last evaluation
  std::vector<std::int64_t> loss_count_;
  StepGraph graph_;
};

}  // namespace packtune::actors
