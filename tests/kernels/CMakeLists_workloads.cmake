# Workload tests' host logic (label unit): the speed-of-light model, the alignment scorer and
# the workload tests' descriptions. Included from tests/kernels/CMakeLists.txt.
perfgate_test(workload_model_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/workload_model_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(alignment_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/alignment_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(workload_tests_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/workload_tests_test.cc
              LIBS perfgate_kernels LABELS unit)
perfgate_test(workload_gpu_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/workload_gpu_test.cc
              LIBS perfgate_kernels LABELS gpu)
perfgate_test(transformer_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/transformer_test.cc
              LIBS perfgate_kernels LABELS unit)
