# Workload tests' host logic (label unit): the speed-of-light model, the alignment scorer and
# the workload tests' descriptions. Included from tests/kernels/CMakeLists.txt.
perfgate_test(workload_model_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/workload_model_test.cc
              LIBS perfgate_kernels LABELS unit)
