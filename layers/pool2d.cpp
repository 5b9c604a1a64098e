#include "layers/pool2d.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {

Pool2d::Pool2d(const torch::nn::MaxPool2dOptions& options) : max_(options) {}
Pool2d::Pool2d(const torch::nn::AvgPool2dOptions& options) : avg_(options) {}
Pool2d::Pool2d(const torch::nn::AdaptiveAvgPool2dOptions& options) : adaptive_(options) {}

void Pool2d::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const Pool2d&>(other);
  // One pooling call over the merged members uses member 0's options.
  bool same = max_.has_value() == theirs.max_.has_value() && avg_.has_value() == theirs.avg_.has_value();
  if (same && max_) {
    const auto &a = *max_, &b = *theirs.max_;
    same = *a.kernel_size() == *b.kernel_size() && *a.stride() == *b.stride() && *a.padding() == *b.padding() &&
           *a.dilation() == *b.dilation() && a.ceil_mode() == b.ceil_mode();
  } else if (same && avg_) {
    const auto &a = *avg_, &b = *theirs.avg_;
    same = *a.kernel_size() == *b.kernel_size() && *a.stride() == *b.stride() && *a.padding() == *b.padding() &&
           a.ceil_mode() == b.ceil_mode() && a.count_include_pad() == b.count_include_pad() &&
           a.divisor_override() == b.divisor_override();
  } else if (same) {
    same = *adaptive_->output_size() == *theirs.adaptive_->output_size();
  }
  if (!same) {
    throw Error("cannot fuse poolings of other kinds, sizes, strides, paddings or modes: members may differ in "
                "channels only");
  }
}

torch::Tensor Pool2d::forward(const torch::Tensor& x) {
  // Members and batch merged into one batch of K*B images, pooled at once. A grouped
  // convolution's output is batch-major ([B, K, ...] in memory, seen as [K, B, ...]): merged as
  // [B*K, ...] it needs no copy, where [K*B, ...] would copy the whole activation. Pooling
  // reads each image alone, so the order of the merged batch changes no value.
  const bool batch_major = !x.is_contiguous() && x.transpose(0, 1).is_contiguous();
  const auto merged = batch_major ? x.transpose(0, 1).reshape({x.size(1) * x.size(0), x.size(2), x.size(3), x.size(4)})
                                  : x.reshape({x.size(0) * x.size(1), x.size(2), x.size(3), x.size(4)});
  namespace F = torch::nn::functional;
  torch::Tensor y;
  if (max_) {
    y = F::max_pool2d(merged, F::MaxPool2dFuncOptions(max_->kernel_size())
                                  .stride(max_->stride()).padding(max_->padding())
                                  .dilation(max_->dilation()).ceil_mode(max_->ceil_mode()));
  } else if (avg_) {
    y = F::avg_pool2d(merged, F::AvgPool2dFuncOptions(avg_->kernel_size())
                                  .stride(avg_->stride()).padding(avg_->padding())
                                  .ceil_mode(avg_->ceil_mode()).count_include_pad(avg_->count_include_pad())
                                  .divisor_override(avg_->divisor_override()));
  } else {
    y = F::adaptive_avg_pool2d(merged, F::AdaptiveAvgPool2dFuncOptions(adaptive_->output_size()));
  }
  if (batch_major) return y.view({x.size(1), x.size(0), y.size(1), y.size(2), y.size(3)}).transpose(0, 1);
  return y.view({x.size(0), x.size(1), y.size(1), y.size(2), y.size(3)});
}

}  // namespace packtune::layers
