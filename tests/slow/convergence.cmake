# The full convergence study (examples/convergence/README.md): three tasks, every mode, 3 seeds.
if(WEFT_HAVE_TORCH)
  add_test(NAME convergence.full_study
           COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python:${PROJECT_SOURCE_DIR}/examples/convergence
                   NCCL_SOCKET_IFNAME=lo OMP_NUM_THREADS=1
                   ${WEFT_TORCH_PYTHON} ${PROJECT_SOURCE_DIR}/examples/convergence/study.py
                   --out ${CMAKE_BINARY_DIR}/convergence-full)
  set_tests_properties(convergence.full_study PROPERTIES LABELS slow TIMEOUT 7200)
endif()
