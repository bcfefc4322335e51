/* emu_nccl_ops.c: tests/nccl_fake/fake_nccl.c (NCCL's semantics over MPI)
 * for the emulated runtime, its stream operations renamed wf_fake_* so that
 * emu_nccl.cc can put them on the emulator's stream; the setup calls keep
 * their names. */
#define ncclGroupStart wf_fake_ncclGroupStart
#define ncclGroupEnd wf_fake_ncclGroupEnd
#define ncclAllReduce wf_fake_ncclAllReduce
#define ncclReduce wf_fake_ncclReduce
#define ncclBroadcast wf_fake_ncclBroadcast
#define ncclReduceScatter wf_fake_ncclReduceScatter
#define ncclAllGather wf_fake_ncclAllGather
#define ncclSend wf_fake_ncclSend
#define ncclRecv wf_fake_ncclRecv
#include "fake_nccl.c"
