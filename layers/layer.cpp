#include "layers/layer.hpp"

#include <algorithm>
#include <atomic>

#include "packtune/error.hpp"

namespace packtune::layers {

namespace {

std::atomic<MemberKernels> member_kernels{MemberKernels::Auto};

}  // namespace

void set_member_kernels(MemberKernels kernels) { member_kernels = kernels; }

bool grouped_kernels(const torch::Tensor& x) {
  const auto setting = member_kernels.load();
  return setting == MemberKernels::Grouped || (setting == MemberKernels::Auto && x.is_cuda());
}

torch::Tensor fit_to(const torch::Tensor& t, at::IntArrayRef sizes) {
  if (t.sizes().equals(sizes)) return t;
  auto out = t;
  std::vector<std::int64_t> pad(2 * sizes.size(), 0);  // constant_pad_nd: last dimension first
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    const auto dim = static_cast<std::int64_t>(d);
    if (out.size(dim) > sizes[d]) out = out.narrow(dim, 0, sizes[d]);
    pad[2 * (sizes.size() - 1 - d) + 1] = sizes[d] - out.size(dim);
  }
  auto fitted = torch::constant_pad_nd(out, pad, 0).contiguous();
  // Only cut: the result must not share the old tensor's storage (it becomes a new leaf).
  return fitted.is_alias_of(t) ? fitted.clone() : fitted;
}

torch::Tensor own_part(torch::Tensor t, const Shape& shape) {
  for (std::size_t d = 0; d < shape.size(); ++d) t = t.narrow(static_cast<std::int64_t>(d), 0, shape[d]);
  return t;
}

torch::Tensor Layer::member_layout(SoloLayout layout, const torch::Tensor& solo) {
  switch (layout) {
    case SoloLayout::Transposed: return solo.t().contiguous();
    case SoloLayout::Row: return solo.reshape({1, -1});
    case SoloLayout::QkvWeight: return solo.reshape({3, -1, solo.size(1)}).permute({2, 0, 1}).contiguous();
    case SoloLayout::QkvBias: return solo.reshape({3, -1});
    case SoloLayout::Same: break;
  }
  return solo;
}

namespace {

torch::Tensor solo_layout(SoloLayout layout, const torch::Tensor& member) {
  switch (layout) {
    case SoloLayout::Transposed: return member.t();
    case SoloLayout::Row: return member.reshape({-1});
    case SoloLayout::QkvWeight: return member.permute({1, 2, 0}).reshape({-1, member.size(0)});
    case SoloLayout::QkvBias: return member.reshape({-1});
    case SoloLayout::Same: break;
  }
  return member;
}

}  // namespace

torch::Tensor Layer::add_stacked_parameter(const std::string& name, const torch::Tensor& solo, SoloLayout layout) {
  auto member = member_layout(layout, solo.detach());
  Entry entry{name, false, layout, {}, {member.sizes().vec()}, {}};
  entry.tensor = register_parameter(name, member.unsqueeze(0).clone());
  entries_.push_back(std::move(entry));
  return entries_.back().tensor;
}

torch::Tensor Layer::add_stacked_buffer(const std::string& name, const torch::Tensor& solo, SoloLayout layout) {
  auto member = member_layout(layout, solo.detach());
  Entry entry{name, true, layout, {}, {member.sizes().vec()}, {}};
  entry.tensor = register_buffer(name, member.unsqueeze(0).clone());
  entries_.push_back(std::move(entry));
  return entries_.back().tensor;
}

std::vector<std::pair<std::string, Layer*>> Layer::sub_layers() const {
  std::vector<std::pair<std::string, Layer*>> out;
  for (const auto& child : named_children()) {
    auto* layer = dynamic_cast<Layer*>(child.value().get());
    if (!layer) {
      throw Error("module \"" + child.key() + "\" of " + name() +
                  " is not a packtune layer: a fusable model is built from packtune::layers only");
    }
    out.emplace_back(child.key(), layer);
  }
  return out;
}

void Layer::refit(Entry& entry, torch::Tensor stacked) {
  // The widest member's shape; the padding mask marks what belongs to no member.
  Shape widest(stacked.dim(), 0);
  widest[0] = static_cast<std::int64_t>(entry.own.size());
  bool padded = false;
  for (const auto& own : entry.own) {
    for (std::size_t d = 0; d < own.size(); ++d) widest[d + 1] = std::max(widest[d + 1], own[d]);
  }
  for (const auto& own : entry.own) padded |= !at::IntArrayRef(own).equals(at::IntArrayRef(widest).slice(1));
  torch::NoGradGuard no_grad;
  stacked = fit_to(stacked, widest);
  entry.tensor.set_data(stacked);
  entry.tensor.mutable_grad() = torch::Tensor();
  entry.padding = torch::Tensor();
  if (!padded) return;
  auto mask = torch::ones(widest, torch::TensorOptions().dtype(torch::kBool));
  for (std::size_t m = 0; m < entry.own.size(); ++m) own_part(mask[static_cast<std::int64_t>(m)], entry.own[m]).fill_(false);
  entry.padding = mask.to(stacked.device());
}

void Layer::append(Layer& other) {
  // A check that failed after some layers had changed would leave the model half-fused.
  check_append(other);
  apply_append(other);
}

void Layer::check_append(const Layer& other) const {
  if (typeid(*this) != typeid(other) || entries_.size() != other.entries_.size()) {
    throw Error("cannot fuse layer " + name() + " with " + other.name() + ": the models differ in structure");
  }
  const auto mine = sub_layers(), theirs = other.sub_layers();
  if (mine.size() != theirs.size()) {
    throw Error("cannot fuse " + name() + ": the models differ in their sub-layers");
  }
  for (std::size_t i = 0; i < mine.size(); ++i) {
    if (mine[i].first != theirs[i].first) {
      throw Error("cannot fuse " + name() + ": sub-layer \"" + mine[i].first + "\" meets \"" + theirs[i].first + "\"");
    }
  }
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    const auto& entry = entries_[i];
    const auto& incoming = other.entries_[i];
    if (entry.name != incoming.name || entry.tensor.dim() != incoming.tensor.dim()) {
      throw Error("cannot fuse " + name() + ": its tensor \"" + entry.name + "\" differs in kind");
    }
  }
  check_values(other);
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i].second->check_append(*theirs[i].second);
}

void Layer::apply_append(Layer& other) {
  torch::NoGradGuard no_grad;
  for (std::size_t i = 0; i < entries_.size(); ++i) {
    auto& entry = entries_[i];
    const auto& incoming = other.entries_[i];
    // Both to the widest of all members first, then one cat.
    entry.own.insert(entry.own.end(), incoming.own.begin(), incoming.own.end());
    Shape widest = entry.tensor.sizes().vec();
    for (std::size_t d = 1; d < widest.size(); ++d) widest[d] = std::max(widest[d], incoming.tensor.size(static_cast<std::int64_t>(d)));
    Shape mine_shape = widest, theirs_shape = widest;
    mine_shape[0] = entry.tensor.size(0);
    theirs_shape[0] = incoming.tensor.size(0);
    auto joined = torch::cat({fit_to(entry.tensor.detach(), mine_shape),
                              fit_to(incoming.tensor.detach().to(entry.tensor.device()), theirs_shape)});
    refit(entry, joined);
  }
  members_ += other.members_;
  append_values(other);
  const auto mine = sub_layers(), theirs = other.sub_layers();
  for (std::size_t i = 0; i < mine.size(); ++i) mine[i].second->apply_append(*theirs[i].second);
  members_changed();
}

void Layer::keep(const std::vector<std::int64_t>& which) {
  torch::NoGradGuard no_grad;
  if (!which.empty()) {
    for (auto& entry : entries_) {
      std::vector<Shape> own;
      for (auto k : which) own.push_back(entry.own[static_cast<std::size_t>(k)]);
      entry.own = std::move(own);
      auto index = torch::tensor(which, torch::kInt64).to(entry.tensor.device());
      refit(entry, entry.tensor.detach().index_select(0, index));
    }
  }
  members_ = static_cast<std::int64_t>(which.size());
  keep_values(which);
  for (auto& [name, layer] : sub_layers()) layer->keep(which);
  members_changed();
}

void Layer::collect_into(const std::string& prefix, bool buffers, std::vector<Stacked>& out) const {
  for (const auto& entry : entries_) {
    if (entry.buffer != buffers) continue;
    // Module::to() moves the tensors, not the masks made beside them.
    auto padding = entry.padding;
    if (padding.defined() && padding.device() != entry.tensor.device()) padding = padding.to(entry.tensor.device());
    out.push_back({prefix + entry.name, entry.tensor, padding, entry.layout, entry.own});
  }
  for (const auto& [name, layer] : sub_layers()) layer->collect_into(prefix + name + ".", buffers, out);
}

std::vector<Layer::Stacked> Layer::collect(bool buffers) const {
  std::vector<Stacked> out;
  collect_into("", buffers, out);
  return out;
}

std::vector<Layer::Stacked> Layer::stacked_parameters() const { return collect(false); }
std::vector<Layer::Stacked> Layer::stacked_buffers() const { return collect(true); }

torch::Tensor Layer::solo_view(const Stacked& entry, const torch::Tensor& row, std::int64_t k) {
  return solo_layout(entry.layout, own_part(row, entry.own[static_cast<std::size_t>(k)]));
}

std::vector<std::pair<std::string, torch::Tensor>> Layer::member_tensors(std::int64_t k) const {
  std::vector<std::pair<std::string, torch::Tensor>> out;
  for (bool buffers : {false, true}) {
    for (const auto& entry : collect(buffers)) out.emplace_back(entry.name, solo_view(entry, entry.tensor.detach()[k], k));
  }
  return out;
}

}  // namespace packtune::layers
