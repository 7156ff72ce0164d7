#include "worker_runtime/train/mlp.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "worker_runtime/train/cpu_kernels.h"
#include "worker_runtime/train/synthetic_dataset.h"

namespace muster::train {

Mlp::Mlp(std::vector<int> sizes) : sizes_(std::move(sizes)) {
  if (sizes_.size() < 2) throw std::invalid_argument("an MLP needs an input and an output size");
  for (size_t l = layers(); l-- > 0;) {
    const size_t in = static_cast<size_t>(sizes_[l]);
    const size_t out = static_cast<size_t>(sizes_[l + 1]);
    const std::string prefix = "layer" + std::to_string(l + 1);
    tensors_.push_back({prefix + ".weight", parameter_count_, in * out});
    parameter_count_ += in * out;
    tensors_.push_back({prefix + ".bias", parameter_count_, out});
    parameter_count_ += out;
  }
  activations_.resize(layers() + 1);
  deltas_.resize(layers() + 1);
}

void Mlp::Initialize(uint64_t seed, std::span<float> params) const {
  std::fill(params.begin(), params.end(), 0.0f);
  for (size_t l = 0; l < layers(); ++l) {
    const ParamTensor& w = tensors_[WeightTensor(l)];
    // Kaiming uniform for ReLU: bound sqrt(6 / fan_in).
    const float bound = std::sqrt(6.0f / static_cast<float>(sizes_[l]));
    for (size_t k = 0; k < w.size; ++k) {
      params[w.offset + k] = bound * UniformSigned(seed, 100 + l, k);
    }
  }
}

BatchStats Mlp::ForwardBackward(std::span<const float> params, std::span<const float> x,
                                std::span<const int> labels, float grad_scale,
                                std::span<double> grads,
                                const std::function<void(size_t tensor)>& on_ready) {
  const size_t batch = labels.size();
  activations_[0].assign(x.begin(), x.end());
  for (size_t l = 0; l < layers(); ++l) {
    const size_t in = static_cast<size_t>(sizes_[l]);
    const size_t out = static_cast<size_t>(sizes_[l + 1]);
    const ParamTensor& w = tensors_[WeightTensor(l)];
    const ParamTensor& b = tensors_[WeightTensor(l) + 1];
    activations_[l + 1].resize(batch * out);
    cpu::LinearForward(activations_[l].data(), params.data() + w.offset, params.data() + b.offset,
                       activations_[l + 1].data(), batch, in, out);
    if (l + 1 < layers()) cpu::Relu(activations_[l + 1].data(), batch * out);
  }

  BatchStats stats;
  const size_t classes = static_cast<size_t>(sizes_.back());
  deltas_[layers()].resize(batch * classes);
  stats.loss_sum = cpu::SoftmaxCrossEntropy(activations_[layers()].data(), labels.data(),
                                            deltas_[layers()].data(), batch, classes, grad_scale,
                                            &stats.correct);
  for (size_t l = layers(); l-- > 0;) {
    const size_t in = static_cast<size_t>(sizes_[l]);
    const size_t out = static_cast<size_t>(sizes_[l + 1]);
    const size_t wi = WeightTensor(l);
    const ParamTensor& w = tensors_[wi];
    const ParamTensor& b = tensors_[wi + 1];
    cpu::LinearWeightGrad(activations_[l].data(), deltas_[l + 1].data(), grads.data() + w.offset,
                          grads.data() + b.offset, batch, in, out);
    on_ready(wi);
    on_ready(wi + 1);
    if (l == 0) break;  // no gradient for the input
    deltas_[l].resize(batch * in);
    cpu::LinearInputGrad(deltas_[l + 1].data(), params.data() + w.offset, deltas_[l].data(), batch,
                         in, out);
    cpu::ReluGrad(activations_[l].data(), deltas_[l].data(), batch * in);
  }
  return stats;
}

std::vector<float> Mlp::TorchOrder(std::span<const float> params) const {
  std::vector<float> out;
  out.reserve(parameter_count_);
  for (size_t l = 0; l < layers(); ++l) {
    const size_t in = static_cast<size_t>(sizes_[l]);
    const size_t n_out = static_cast<size_t>(sizes_[l + 1]);
    const ParamTensor& w = tensors_[WeightTensor(l)];
    const ParamTensor& b = tensors_[WeightTensor(l) + 1];
    for (size_t o = 0; o < n_out; ++o) {
      for (size_t i = 0; i < in; ++i) out.push_back(params[w.offset + i * n_out + o]);
    }
    out.insert(out.end(), params.begin() + static_cast<std::ptrdiff_t>(b.offset),
               params.begin() + static_cast<std::ptrdiff_t>(b.offset + b.size));
  }
  return out;
}

}  // namespace muster::train
