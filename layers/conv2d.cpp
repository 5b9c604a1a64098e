#include "layers/conv2d.hpp"

#include "packtune/error.hpp"

namespace packtune::layers {
Conv2d::Conv2d(std::int64_t in_channels, std::int64_t out_channels, std::int64_t kernel, std::int64_t stride,
               std::int64_t padding, bool bias)
    : stride_(stride), padding_(padding) {
  torch::nn::Conv2d solo(
      torch::nn::Conv2dOptions(in_channels, out_channels, kernel).stride(stride).padding(padding).bias(bias));
  weight_ = add_stacked_parameter("weight", solo->weight);
  if (bias) bias_ = add_stacked_parameter("bias", solo->bias);
}

void Conv2d::check_values(const Layer& other) const {
  const auto& theirs = dynamic_cast<const Conv2d&>(other);
  const auto& mine_kernel = own_shapes(0).front();
  const auto& their_kernel = theirs.own_shapes(0).front();
  if (theirs.stride_ != stride_ || theirs.padding_ != padding_ || mine_kernel[2] != their_kernel[2] ||
      mine_kernel[3] != their_kernel[3]) {
    // A smaller kernel would be zero-padded at its end, not centred, and one stride and one
    // padding serve all members.
    throw Error("cannot fuse convolutions with other kernel sizes, strides or paddings: members may differ in "
                "channels only");
  }
}

torch::Tensor Conv2d::forward(const torch::Tensor& x) {
  const auto k = x.size(0), batch = x.size(1);
  const auto in = weight_.size(2);
  if (k == 1 || !grouped_kernels(x) || in == 1) {
    // Member by member, each convolution is bitwise what it is alone. Grouped over K members,
    // LibTorch picks another algorithm (on the CPU for any channel count, on any device for
    // one input channel, where it is depthwise) whose sums run in another order.
    std::vector<torch::Tensor> outs;
    for (std::int64_t i = 0; i < k; ++i) {
      auto bias = bias_.defined() ? bias_[i] : torch::Tensor();
      outs.push_back(torch::conv2d(x[i], weight_[i], bias, stride_, padding_));
    }
    if (k == 1) return outs.front().unsqueeze(0);
    // Where the layers after run grouped, stacked batch-major as a grouped convolution leaves
    // its output: the next batch norm or convolution then views it as [B, K*C, ...] without
    // copying it (this is a ResNet's stem, whose one input channel runs member by member).
    if (grouped_kernels(x)) return torch::stack(outs, 1).transpose(0, 1);
    return torch::stack(outs);
  }
  // Channels-last copies of both were slower on an H200 (4.40x against 5.45x a ResNet unit of 8
  // in fp32, 2026-11-29, docs/benchmarks.md): the default layout it is.
  const auto stacked = x.transpose(0, 1).reshape({batch, k * in, x.size(3), x.size(4)});
  const auto w = weight_.view({k * weight_.size(1), in, weight_.size(3), weight_.size(4)});
  const auto bias = bias_.defined() ? bias_.view({-1}) : torch::Tensor();
  auto y = torch::conv2d(stacked, w, bias, stride_, padding_, 1, k);  // [B, K*out, H', W']
  return y.view({batch, k, weight_.size(1), y.size(2), y.size(3)}).transpose(0, 1);
}

}  // namespace packtune::layers
