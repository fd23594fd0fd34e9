# torch.distributed backend "weft" (integrations/pytorch) against gloo and a float64 reference,
# in rank processes of Debian's Python. Without the backend built, each reports skipped.
set(weft_pytorch_tests BackendOps.test_one_rank BackendOps.test_two_ranks BackendOps.test_four_ranks
                       DdpParity.test_two_ranks DdpParity.test_four_ranks EnvCompression.test_two_ranks
                       Lifecycle.test_env_init_like_torchrun
                       Lifecycle.test_dead_rank_is_an_exception_not_a_hang)
foreach(case IN LISTS weft_pytorch_tests)
  if(WEFT_HAVE_TORCH)
    add_test(NAME pytorch.${case} COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python
                                          NCCL_SOCKET_IFNAME=lo WEFT_TIMEOUT=60 OMP_NUM_THREADS=1
                                          ${WEFT_TORCH_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/backend_test.py ${case})
  else()
    add_test(NAME pytorch.${case}
             COMMAND sh -c "echo 'skipped: the PyTorch backend was not built (WEFT_WITH_TORCH, libtorch-dev)'; exit 77")
  endif()
  set_tests_properties(pytorch.${case} PROPERTIES LABELS pytorch TIMEOUT 300 SKIP_RETURN_CODE 77)
endforeach()

# The convergence study's short form (examples/convergence): 2 ranks, logistic regression and
# the MLP, every mode, asserting the orderings the literature expects (about 2.5 minutes).
if(WEFT_HAVE_TORCH)
  add_test(NAME pytorch.convergence_short
           COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${CMAKE_BINARY_DIR}/python:${PROJECT_SOURCE_DIR}/examples/convergence
                   NCCL_SOCKET_IFNAME=lo OMP_NUM_THREADS=1
                   ${WEFT_TORCH_PYTHON} ${PROJECT_SOURCE_DIR}/examples/convergence/study.py --short
                   --out ${CMAKE_BINARY_DIR}/convergence-short)
else()
  add_test(NAME pytorch.convergence_short
           COMMAND sh -c "echo 'skipped: the PyTorch backend was not built (WEFT_WITH_TORCH, libtorch-dev)'; exit 77")
endif()
set_tests_properties(pytorch.convergence_short PROPERTIES LABELS pytorch TIMEOUT 600 SKIP_RETURN_CODE 77)
