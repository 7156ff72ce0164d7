// Mlp: a ReLU multi-layer perceptron classifier whose parameters live in one
// flat float buffer, so gradients can be reduced in contiguous buckets.
//
// Layout of the flat buffer (and of the gradient buffer): tensors in the
// order the backward pass finishes them — last layer first, weight then
// bias — so a bucket of the buffer's front is ready while earlier layers
// are still being differentiated. A layer's weight is stored input-major
// ([in][out]); WriteTorchOrder() converts for export.
//
// Thread-safety: const methods are safe to call concurrently.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace muster::train {

struct ParamTensor {
  std::string name;  // "layer1.weight", "layer1.bias", ...
  size_t offset = 0;
  size_t size = 0;
};

struct BatchStats {
  double loss_sum = 0;  // sum over the batch of per-sample losses
  double correct = 0;   // samples whose prediction was right
};

class Mlp {
 public:
  // sizes: {features, hidden..., classes}; at least two entries.
  explicit Mlp(std::vector<int> sizes);

  size_t parameter_count() const { return parameter_count_; }
  // In flat-buffer order (backward order).
  const std::vector<ParamTensor>& tensors() const { return tensors_; }
  const std::vector<int>& sizes() const { return sizes_; }
  size_t layers() const { return sizes_.size() - 1; }
  // Width of layer boundary l: 0 is the input, layers() the class scores.
  size_t width(size_t l) const { return static_cast<size_t>(sizes_[l]); }
  // Index in tensors() of layer l's (0-based) weight; its bias follows.
  size_t WeightTensor(size_t layer) const { return 2 * (layers() - 1 - layer); }

  // Kaiming-uniform weights and zero biases, from `seed`.
  void Initialize(uint64_t seed, std::span<float> params) const;

  // One forward and backward pass over `batch` samples (x: batch x features).
  // Adds d(sum of losses)/d(params) * grad_scale to `grads` (zero it first;
  // double, see LinearWeightGrad),
  // and calls on_ready(k) as soon as tensor k's gradient is final.
  BatchStats ForwardBackward(std::span<const float> params, std::span<const float> x,
                             std::span<const int> labels, float grad_scale, std::span<double> grads,
                             const std::function<void(size_t tensor)>& on_ready);

  // The parameters in forward order (layer 1 first), each weight as
  // [out][in] like torch.nn.Linear, each followed by its bias.
  std::vector<float> TorchOrder(std::span<const float> params) const;

 private:
  std::vector<int> sizes_;
  std::vector<ParamTensor> tensors_;
  size_t parameter_count_ = 0;
  // Scratch per layer, reused across steps: activations and their gradients.
  std::vector<std::vector<float>> activations_;
  std::vector<std::vector<float>> deltas_;
};

}  // namespace muster::train
