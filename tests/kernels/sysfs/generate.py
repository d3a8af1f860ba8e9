#!/usr/bin/env python3
"""Writes the sysfs trees host-stream's sizing (tests/kernels/host_stream_test.cc) and
port-health (tests/kernels/port_health_test.cc) are tested on.

Each tree holds what the worker reads: for recorded cpus, every cache index's level, type,
size, shared_cpu_list and id (devices/system/cpu/cpuN/cache/indexM/), and the NUMA nodes'
cpulists (devices/system/node/nodeN/cpulist). The layouts follow each part's published cache
hierarchy and Linux's numbering (first hardware threads of every core, then their SMT
siblings); they are modelled from the datasheets, not copied from a machine. To stay small, a
tree records a few cpus of every last-level cache instance, enough for several cpus to name
the same instance; the cpus left out are named in shared_cpu_list all the same.

The fabric trees (cx7-*) hold what port-health reads for each RDMA port:
class/infiniband/<hca> -> the HCA's PCI function's infiniband/<hca> folder, as on a real
machine, with ports/<n>/{state,phys_state,rate,link_layer,counters/*}, the device link back to
the PCI function and that function's numa_node. They model an HGX H100/H200/B200 node's eight
single-port ConnectX-7 compute NICs at NDR (400 Gb/sec, 4X), from the kernel's documented
layout (Documentation/ABI/stable/sysfs-class-infiniband) and the values a ConnectX-7 reports;
they too are written here, not captured. A tree with a before/ and an after/ holds two
snapshots of the same node, taken either side of a test's window.

  python3 tests/kernels/sysfs/generate.py   # rewrites the trees beside this script
"""
import os
import shutil

HERE = os.path.dirname(os.path.abspath(__file__))


def cpulist(ranges):
    return ",".join(f"{a}-{b}" if a != b else f"{a}" for a, b in ranges)


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")


def machine(name, cores_per_socket, sockets, smt, l1d_k, l1i_k, l2_k, l3_k, cores_per_l3,
            per_l3_recorded):
    """`per_l3_recorded` cores of every L3 instance are recorded (with their SMT siblings)."""
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    cores = cores_per_socket * sockets
    threads = cores * (2 if smt else 1)

    def siblings(core):
        return [core, core + cores] if smt else [core]

    l3_instances = cores // cores_per_l3
    for inst in range(l3_instances):
        first = inst * cores_per_l3
        last = first + cores_per_l3 - 1
        shared = [(first, last)] + ([(first + cores, last + cores)] if smt else [])
        for core in range(first, first + per_l3_recorded):
            for cpu in siblings(core):
                base = os.path.join(root, f"devices/system/cpu/cpu{cpu}/cache")
                core_list = cpulist([(c, c) for c in siblings(core)])
                for index, (level, kind, size, shared_list, cid) in enumerate([
                    (1, "Data", l1d_k, core_list, core),
                    (1, "Instruction", l1i_k, core_list, core),
                    (2, "Unified", l2_k, core_list, core),
                    (3, "Unified", l3_k, cpulist(shared), inst),
                ]):
                    d = os.path.join(base, f"index{index}")
                    write(os.path.join(d, "level"), str(level))
                    write(os.path.join(d, "type"), kind)
                    write(os.path.join(d, "size"), f"{size}K")
                    write(os.path.join(d, "shared_cpu_list"), shared_list)
                    write(os.path.join(d, "id"), str(cid))
    for s in range(sockets):
        first = s * cores_per_socket
        last = first + cores_per_socket - 1
        ranges = [(first, last)] + ([(first + cores, last + cores)] if smt else [])
        write(os.path.join(root, f"devices/system/node/node{s}/cpulist"), cpulist(ranges))
    write(os.path.join(root, "devices/system/node/online"), cpulist([(0, sockets - 1)]))
    write(os.path.join(root, "devices/system/cpu/online"), cpulist([(0, threads - 1)]))


# 2x AMD EPYC 9654 (Zen 4, NPS1): 96 cores and 12 CCDs a socket, 32 MiB of L3 per CCD shared
# by its 8 cores: 24 instances, 768 MiB in all.
machine("epyc-9654-2s", cores_per_socket=96, sockets=2, smt=True, l1d_k=32, l1i_k=32,
        l2_k=1024, l3_k=32768, cores_per_l3=8, per_l3_recorded=1)
# 2x Intel Xeon Platinum 8480+ (Sapphire Rapids, SNC off): 56 cores a socket sharing 105 MiB
# of L3: 2 instances, 210 MiB in all.
machine("xeon-8480-2s", cores_per_socket=56, sockets=2, smt=True, l1d_k=48, l1i_k=32,
        l2_k=2048, l3_k=107520, cores_per_l3=56, per_l3_recorded=8)
# NVIDIA Grace (the CPU of a GH200 host): 72 Neoverse V2 cores, no SMT, sharing 114 MiB of L3:
# one instance. The GPU's memory nodes of a GH200 are not recorded: the CPU's node only.
machine("grace", cores_per_socket=72, sockets=1, smt=False, l1d_k=64, l1i_k=64, l2_k=1024,
        l3_k=116736, cores_per_l3=72, per_l3_recorded=12)


# The fabric trees: eight single-port ConnectX-7 HCAs, four behind each socket's PCIe switches.
NICS = [("mlx5_0", "0000:18:00.0", 0), ("mlx5_1", "0000:40:00.0", 0), ("mlx5_2", "0000:4f:00.0", 0),
        ("mlx5_3", "0000:5e:00.0", 0), ("mlx5_4", "0000:9a:00.0", 1), ("mlx5_5", "0000:c0:00.0", 1),
        ("mlx5_6", "0000:ce:00.0", 1), ("mlx5_7", "0000:dc:00.0", 1)]
NDR = "400 Gb/sec (4X NDR)"
# What a port that has carried traffic for a while shows (the data counters are in 4-byte words).
CLEAN_COUNTERS = {
    "symbol_error": 0, "link_error_recovery": 0, "link_downed": 0, "port_rcv_errors": 0,
    "port_rcv_remote_physical_errors": 0, "port_rcv_switch_relay_errors": 0,
    "port_xmit_discards": 0, "port_xmit_constraint_errors": 0, "port_rcv_constraint_errors": 0,
    "local_link_integrity_errors": 0, "excessive_buffer_overrun_errors": 0, "VL15_dropped": 0,
    "port_xmit_wait": 1843, "port_xmit_data": 9172635548, "port_rcv_data": 9172598811,
    "port_xmit_packets": 2293154, "port_rcv_packets": 2293148,
}


def fabric(name, changes=None):
    """`changes` maps an HCA to what differs from a clean NDR port: state, phys_state, rate and
    counter values (counter increases are given as added to the clean ones)."""
    root = os.path.join(HERE, name)
    shutil.rmtree(root, ignore_errors=True)
    for hca, pci, node in NICS:
        bus = pci[5:7]
        function = os.path.join("devices", f"pci0000:{bus}", f"0000:{bus}:01.0", pci)
        write(os.path.join(root, function, "numa_node"), str(node))
        dev = os.path.join(function, "infiniband", hca)
        os.makedirs(os.path.join(root, "class/infiniband"), exist_ok=True)
        os.symlink(os.path.join("../..", dev), os.path.join(root, "class/infiniband", hca))
        os.makedirs(os.path.join(root, dev), exist_ok=True)
        os.symlink(os.path.join("../../..", pci), os.path.join(root, dev, "device"))
        change = (changes or {}).get(hca, {})
        port = os.path.join(root, dev, "ports", "1")
        write(os.path.join(port, "state"), change.get("state", "4: ACTIVE"))
        write(os.path.join(port, "phys_state"), change.get("phys_state", "5: LinkUp"))
        write(os.path.join(port, "rate"), change.get("rate", NDR))
        write(os.path.join(port, "link_layer"), "InfiniBand")
        for counter, value in CLEAN_COUNTERS.items():
            value += change.get("counters", {}).get(counter, 0)
            write(os.path.join(port, "counters", counter), str(value))


# Every port up at NDR, no errors.
fabric("cx7-ndr-clean")
# mlx5_5's cable pulled: the port polls for a peer; the link went down once.
fabric("cx7-ndr-port-down", {"mlx5_5": {"state": "1: DOWN", "phys_state": "2: Polling",
                                        "rate": "10 Gb/sec (4X SDR)",
                                        "counters": {"link_downed": 1}}})
# mlx5_2 trained two lanes of four (a damaged cable or a dirty connector): 200 Gb/sec at NDR.
fabric("cx7-ndr-degraded-width", {"mlx5_2": {"rate": "200 Gb/sec (2X NDR)"}})
# mlx5_6 came up at HDR (an HDR cable or switch port on an NDR fabric): 200 Gb/sec on 4 lanes.
fabric("cx7-ndr-degraded-speed", {"mlx5_6": {"rate": "200 Gb/sec (4X HDR)"}})
# mlx5_3's link takes a burst of symbol errors, retrains three times and drops received packets
# between the two snapshots, staying up.
BURST = {"symbol_error": 250, "link_error_recovery": 3, "port_rcv_errors": 180}
fabric("cx7-ndr-burst/before")
fabric("cx7-ndr-burst/after", {"mlx5_3": {"counters": BURST}})
# mlx5_7's link goes down once and comes back (a flap) between the two snapshots.
fabric("cx7-ndr-flap/before")
fabric("cx7-ndr-flap/after", {"mlx5_7": {"counters": {"link_downed": 1, "link_error_recovery": 1}}})
