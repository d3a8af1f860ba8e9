# GPU kernels' tests. Included from tests/kernels/CMakeLists.txt.
# Host-side logic runs everywhere (label unit); gpu_device_test needs a GPU (label gpu) and
# skips each case cleanly without one.
perfgate_test(gpu_formulas_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_formulas_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(gpu_nvml_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_nvml_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(gpu_profile_select_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_profile_select_test.cc
              LIBS perfgate_kernels perfgate_common LABELS unit)
target_compile_definitions(gpu_profile_select_test PRIVATE PERFGATE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
perfgate_test(gpu_prepare_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_prepare_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(gpu_device_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_device_test.cc
              LIBS perfgate_kernels LABELS gpu)
perfgate_test(gpu_health_counters_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_health_counters_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(gpu_config_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_config_test.cc
              LIBS perfgate_kernels perfgate_common LABELS unit)
target_compile_definitions(gpu_config_test PRIVATE PERFGATE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
perfgate_test(gpu_memtest_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_memtest_test.cc
              LIBS perfgate_kernels perfgate_common LABELS unit)
target_compile_definitions(gpu_memtest_test PRIVATE PERFGATE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
perfgate_test(gpu_power_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_power_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(gpu_memtest_device_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_memtest_device_test.cc
              LIBS perfgate_kernels LABELS gpu)
perfgate_test(gpu_burn_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/gpu_burn_test.cc
              LIBS perfgate_kernels perfgate_common LABELS unit)
target_compile_definitions(gpu_burn_test PRIVATE PERFGATE_SOURCE_DIR="${PROJECT_SOURCE_DIR}")
# The cross-GPU consistency screen's decision on host outputs, and the test through the runner.
perfgate_test(consistency_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/consistency_test.cc
              LIBS perfgate_worker_lib LABELS unit)

if(PERFGATE_CUDA)
  perfgate_test(cublaslt_loader_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/cublaslt_loader_test.cc
                LIBS perfgate_kernels LABELS unit)
endif()
