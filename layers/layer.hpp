#pragma once
// The base of packtune's fusable layers (HFTA's horizontal fusion, written once). A Layer holds
// K members of one layer and trains them as one: every parameter and buffer is stacked with a
// leading member dimension, [K, ...], and every activation between layers is [K, B, ...].
//
// A model is written once with these layers and a scalar size per layer (K = 1). The engine
// fuses K such models by append(): the stacked tensors of each pair of corresponding layers
// are concatenated, so a model trains alone or fused without a change.
//
// Members may differ in width where a layer allows it. The stacked tensors then take the
// widest member's shape; a narrower member's slice is padded at the end of every dimension
// with zeros. Padded activations stay zero through the library's layers (or meet weights
// that are zero), so a member's own outputs are its solo outputs; the engine masks the
// padding's gradients (padding_mask) so weight decay and optimizer state never touch it.
//
// Each stacked tensor also knows its member's solo name and layout (a Linear weight is stored
// [in, out] but saved [out, in] as LibTorch holds it): member_tensors() gives a member's
// tensors as its solo model's state dict, which is what a checkpoint holds.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <torch/torch.h>

namespace packtune::layers {

using Shape = std::vector<std::int64_t>;

// How a member's slice of a stacked tensor relates to the tensor the solo LibTorch module holds.
enum class SoloLayout {
  Same,        // the same shape
  Transposed,  // a matrix stored [in, out], held [out, in]
  Row,         // a vector stored [1, n], held [n]
  // Attention's packed q, k, v projections (MultiheadAttention's in_proj_weight/in_proj_bias):
  // three blocks of n rows held as one tensor. Stored so that padding each dimension at its end
  // keeps the blocks apart and one batched matmul serves all three.
  QkvWeight,   // a matrix stored [in, 3, n], held [3 * n, in] (each block transposed)
  QkvBias,     // a vector stored [3, n], held [3 * n]
};

class Layer : public torch::nn::Module {
 public:
  // Activations in and out are [K, B, ...].
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;

  // Members of this layer (its stacked tensors' first dimension); 1 for a layer just built.
  std::int64_t members() const { return members_; }

  // Appends the members of `other`, a layer of the same type and structure (built the same
  // way, possibly with other widths or per-member values), and of all its sub-layers.
  // Throws packtune::Error naming the first layer that differs, before anything changes.
  void append(Layer& other);
  // Keeps only the members at `which` (ascending indices), here and in every sub-layer;
  // the stacked tensors shrink to the widest remaining member.
  void keep(const std::vector<std::int64_t>& which);

  // Every stacked parameter of this layer and its sub-layers, in a fixed order, with its
  // full solo name ("body.0.weight") and its padding: true on positions that belong to no
  // member (undefined when no member is padded). What a fused optimizer steps over.
  struct Stacked {
    std::string name;
    torch::Tensor tensor;   // [K, ...], the registered parameter or buffer
    torch::Tensor padding;  // [K, ...] bool, or undefined
    SoloLayout layout = SoloLayout::Same;
    std::vector<Shape> own;  // each member's own shape, in stacked layout, without K
  };
  std::vector<Stacked> stacked_parameters() const;
  std::vector<Stacked> stacked_buffers() const;

  // Member k's parameters and buffers under its solo state-dict names, in solo layout, as
  // views into the stacked tensors (no copies), except the Qkv layouts of a member narrower
  // than the widest (whose padded blocks cannot be one view): those are copies.
  std::vector<std::pair<std::string, torch::Tensor>> member_tensors(std::int64_t k) const;
  // Member k's row of a tensor shaped like `entry` (the entry itself, or optimizer state
  // stacked like it), given as `row` = stacked[k] (padded), as a view in solo layout.
  static torch::Tensor solo_view(const Stacked& entry, const torch::Tensor& row, std::int64_t k);
  // The inverse: a solo-layout tensor in the stacked member layout (without K).
  static torch::Tensor member_layout(SoloLayout layout, const torch::Tensor& solo);

  // Layers are trained in train() mode; eval() switches batch norm to running statistics
  // and turns dropout off, as LibTorch's modules do.

 protected:
  // Registers a stacked parameter (or buffer) from a solo-layout tensor of member 0 (its own
  // shape): a Linear registers its weight with Transposed layout. Returns the stacked [1, ...]
  // tensor, which later append()/keep() and Module::to() change in place (set_data), so a
  // layer keeps the handle and always sees the current members.
  torch::Tensor add_stacked_parameter(const std::string& name, const torch::Tensor& solo,
                                      SoloLayout layout = SoloLayout::Same);
  torch::Tensor add_stacked_buffer(const std::string& name, const torch::Tensor& solo,
                                   SoloLayout layout = SoloLayout::Same);

  // Hooks for layers with per-member values kept outside stacked tensors (dropout rates):
  // check_values() throws packtune::Error where `other`'s (the same type) cannot fuse with
  // these, and changes nothing: append() runs it over the whole tree first. append_values()
  // then takes `other`'s; keep_values() keeps `which`.
  virtual void check_values(const Layer& /*other*/) const {}
  virtual void append_values(Layer& /*other*/) {}
  virtual void keep_values(const std::vector<std::int64_t>& /*which*/) {}
  // Called after the members changed, for layers that cache per-member data.
  virtual void members_changed() {}

  // Each member's own shape of this layer's stacked entry `i` (registration order).
  const std::vector<Shape>& own_shapes(std::size_t i) const { return entries_[i].own; }

 private:
  struct Entry {
    std::string name;
    bool buffer = false;
    SoloLayout layout = SoloLayout::Same;
    torch::Tensor tensor;
    std::vector<Shape> own;
    torch::Tensor padding;
  };
  // append()'s two passes over the tree: every check, then every change.
  void check_append(const Layer& other) const;
  void apply_append(Layer& other);
  void refit(Entry& entry, torch::Tensor stacked);
  std::vector<Stacked> collect(bool buffers) const;
  void collect_into(const std::string& prefix, bool buffers, std::vector<Stacked>& out) const;
  std::vector<std::pair<std::string, Layer*>> sub_layers() const;

  std::vector<Entry> entries_;
  std::int64_t members_ = 1;
};

// How layers with a choice run K > 1 members (Conv2d, BatchNorm, LayerNorm): Auto runs them as one
// grouped kernel on a GPU and member by member on the CPU, where each member's sums then run in
// their solo order, bit for bit, and the grouped kernel is no faster. Grouped and PerMember
// force one way everywhere: tests use Grouped to check the GPU's path on the CPU.
enum class MemberKernels { Auto, Grouped, PerMember };
void set_member_kernels(MemberKernels kernels);
// Whether K members on `x`'s device run as one grouped kernel under the current setting.
bool grouped_kernels(const torch::Tensor& x);

// `t` cut or zero-padded at the end of every dimension to `sizes` (same rank).
torch::Tensor fit_to(const torch::Tensor& t, at::IntArrayRef sizes);
// A member's own part of a padded tensor (a view): `t` narrowed to `shape` in every dimension.
torch::Tensor own_part(torch::Tensor t, const Shape& shape);

}  // namespace packtune::layers
