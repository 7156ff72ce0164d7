// muster-train: the example data-parallel trainer on libmuster_runtime. An
// MLP classifier on a synthetic dataset drawn from --seed, SGD with
// momentum, gradients averaged in buckets overlapped with the backward pass:
// on a GPU over NCCL (CUDA kernels and cuBLAS), or on CPU over Gloo
// (--backend; see trainer.h).
// Run it under muster (or torchrun, or srun): it reads its rank from the
// environment; alone, it trains as a single process.
#include <CLI/CLI.hpp>

#include <iostream>
#include <string>

#include "common/version.h"
#include "worker_runtime/train/trainer.h"

int main(int argc, char** argv) {
  muster::train::TrainOptions o;
  CLI::App app{"muster-train: data-parallel MLP training on libmuster_runtime"};
  app.add_option("--steps", o.steps, "optimizer steps in total")->capture_default_str();
  app.add_option("--global-batch", o.global_batch,
                 "samples per step across all ranks, at any world size: split as evenly as "
                 "possible (ranks past it read none), each rank's gradient weighted by its "
                 "sample count, so every world size ends with the same weights")
      ->capture_default_str();
  app.add_option("--hidden", o.hidden, "width of each hidden layer")->capture_default_str();
  app.add_option("--depth", o.depth, "number of hidden layers")->capture_default_str();
  app.add_option("--lr", o.lr, "learning rate")->capture_default_str();
  app.add_option("--momentum", o.momentum, "SGD momentum")->capture_default_str();
  app.add_option("--seed", o.seed, "seed of the data and the initial weights")
      ->capture_default_str();
  app.add_option("--backend", o.backend,
                 "nccl: train on this worker's GPU (device LOCAL_RANK) over NCCL; gloo: train "
                 "on CPU over Gloo; auto: nccl if this build has NCCL and a GPU is visible, "
                 "else gloo")
      ->capture_default_str();
  app.add_option("--checkpoint-dir", o.checkpoint_dir,
                 "write checkpoints here and resume from the newest valid one");
  app.add_option("--checkpoint-every", o.checkpoint_every, "steps between checkpoints (0: never)")
      ->capture_default_str();
  app.add_option("--out", o.out_path,
                 "at the end, write every parameter as raw little-endian float32: layer 1 "
                 "weight ([out][in], as torch.nn.Linear), layer 1 bias, layer 2 weight, ...");
  app.add_option("--dataset-size", o.dataset_size,
                 "samples in the synthetic dataset, any number: each epoch is a fresh "
                 "permutation, and a step may end one epoch and begin the next")
      ->capture_default_str();
  app.add_option("--features", o.features, "input features")->capture_default_str();
  app.add_option("--classes", o.classes, "classes")->capture_default_str();
  app.add_option("--bucket-mb", o.bucket_mb, "gradient bucket size in MiB")->capture_default_str();
  bool no_overlap = false;
  app.add_flag("--no-overlap", no_overlap,
               "reduce gradients after the backward pass instead of during it");
  app.add_option("--log-every", o.log_every, "steps between log lines")->capture_default_str();
  app.add_option("--collective-timeout", o.collective_timeout_s,
                 "seconds before a collective (or the store) is declared hung")
      ->capture_default_str();
  app.add_option("--step-sleep-ms", o.step_sleep_ms,
                 "sleep after each step (to rehearse failures mid-run)")
      ->capture_default_str();
  app.set_version_flag("--version", std::string("muster-train ") + muster::kVersion);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help or --version
    // Bad input exits 2, as muster's and musterd's do (not CLI11's own codes).
    std::cerr << "muster-train: error: " << e.what() << "\n";
    return 2;
  }
  o.overlap = !no_overlap;
  return muster::train::RunTraining(o);
}
