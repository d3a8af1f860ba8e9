// The config test with its dependencies injected (NVML, the host filesystem, NCCL's version),
// for unit tests; MakeConfigTest() in test_factories.h wires the real ones.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "kernels/config/host_fs.h"
#include "kernels/nvml/nvml.h"
#include "kernels/test.h"

namespace perfgate::kernels::config {

struct ConfigDeps {
  std::function<Result<std::shared_ptr<nvml::Nvml>>()> nvml;  // thread-safe
  std::shared_ptr<const HostFs> fs;
  std::function<std::string()> nccl_version;  // "" without NCCL
};

std::unique_ptr<Test> MakeConfigTestWith(ConfigDeps deps);

}  // namespace perfgate::kernels::config
