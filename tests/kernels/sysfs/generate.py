#!/usr/bin/env python3
"""Writes the sysfs trees host-stream's sizing is tested on (tests/kernels/host_stream_test.cc).

Each tree holds what the worker reads: for recorded cpus, every cache index's level, type,
size, shared_cpu_list and id (devices/system/cpu/cpuN/cache/indexM/), and the NUMA nodes'
cpulists (devices/system/node/nodeN/cpulist). The layouts follow each part's published cache
hierarchy and Linux's numbering (first hardware threads of every core, then their SMT
siblings); they are modelled from the datasheets, not copied from a machine. To stay small, a
tree records a few cpus of every last-level cache instance, enough for several cpus to name
the same instance; the cpus left out are named in shared_cpu_list all the same.

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
