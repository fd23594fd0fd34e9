# Programs compiled against NVIDIA's nccl.h from the CUDA toolkit and linked against weft's
# libnccl.so.2, run under weftrun. Without the toolkit's header the test reports skipped.
find_path(WEFT_NVIDIA_NCCL_INCLUDE nccl.h PATHS /usr/local/cuda/include ${CUDAToolkit_INCLUDE_DIRS}
          NO_DEFAULT_PATH)
if(WEFT_NVIDIA_NCCL_INCLUDE AND EXISTS ${WEFT_NVIDIA_NCCL_INCLUDE}/cuda_runtime.h)
  add_executable(abi_allreduce abi/abi_allreduce.c)
  # Only the toolkit's include directory: the program must not see weft's nccl.h.
  set_target_properties(abi_allreduce PROPERTIES INCLUDE_DIRECTORIES "${WEFT_NVIDIA_NCCL_INCLUDE}"
                                                BUILD_RPATH "$<TARGET_FILE_DIR:nccl>")
  target_link_libraries(abi_allreduce PRIVATE $<TARGET_FILE:nccl>)
  add_dependencies(abi_allreduce nccl)
  foreach(n 1 2 4)
    add_test(NAME abi_allreduce_${n}ranks COMMAND weftrun -n ${n} $<TARGET_FILE:abi_allreduce>)
    set_tests_properties(abi_allreduce_${n}ranks PROPERTIES LABELS "integration;abi" TIMEOUT 120
                         ENVIRONMENT "${WEFT_TEST_ENV}")
  endforeach()
else()
  add_test(NAME abi_allreduce COMMAND sh -c "echo 'skipped: NVIDIA nccl.h (CUDA toolkit) not found'; exit 77")
  set_tests_properties(abi_allreduce PROPERTIES LABELS "integration;abi" SKIP_RETURN_CODE 77)
endif()
