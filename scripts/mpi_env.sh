# Sourced by the scripts: lets OpenMPI run as root (containers, CI) and keeps
# one thread per rank unless the caller already chose.
export OMPI_ALLOW_RUN_AS_ROOT=1
export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"
export OMPI_MCA_rmaps_base_oversubscribe=1
