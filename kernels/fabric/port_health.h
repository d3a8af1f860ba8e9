// The port-health test over a port reader of the caller's choosing: the worker's reads
// /sys (MakePortHealthTest, test_factories.h); unit tests read recorded trees, a different one
// before and after the window.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kernels/fabric/ports.h"
#include "kernels/test.h"

namespace perfgate::kernels {

namespace fabric {
// Reads every port once (ReadIbPorts of some root). Called from one thread at a time.
using PortReader = std::function<Result<std::vector<IbPort>>()>;
}  // namespace fabric

// port-health reading the ports with `read`; `where` names what it reads in messages
// ("/sys/class/infiniband").
std::unique_ptr<Test> MakePortHealthTestWith(fabric::PortReader read, std::string where);

}  // namespace perfgate::kernels
