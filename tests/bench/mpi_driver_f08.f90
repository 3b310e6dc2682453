! mpi_driver_f08.f90 - tests/bench/mpi_driver.c's loops through the mpi_f08
! module, for the instruction counts of docs/mpi.md (one rank, a singleton, under
! callgrind):
!
!   mpi_driver_f08 p2p|allreduce <iterations>
!
! p2p: each iteration is MPI_Irecv + MPI_Isend of one double to itself and
! MPI_Waitall of both with MPI_STATUSES_IGNORE; allreduce: one MPI_Allreduce of
! one double. It checks the data it received and prints the calls it made
! ("calls <n>").
program mpi_driver_f08
  use mpi_f08
  implicit none
  character(len=32) :: what, arg
  integer :: iters, i, bad, rank
  double precision :: out, in, v, total
  type(MPI_Request) :: r(2)

  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call get_command_argument(1, what)
  call get_command_argument(2, arg)
  read (arg, *) iters
  bad = 0
  do i = 1, iters
    if (what == "p2p") then
      out = i
      in = -1
      call MPI_Irecv(in, 1, MPI_DOUBLE_PRECISION, rank, 0, MPI_COMM_WORLD, r(1))
      call MPI_Isend(out, 1, MPI_DOUBLE_PRECISION, rank, 0, MPI_COMM_WORLD, r(2))
      call MPI_Waitall(2, r, MPI_STATUSES_IGNORE)
      if (in /= out) bad = bad + 1
    else
      v = i
      call MPI_Allreduce(v, total, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
      if (total /= v) bad = bad + 1
    end if
  end do
  if (bad /= 0) then
    print '("wrong results: ",I0)', bad
    call MPI_Abort(MPI_COMM_WORLD, 1)
  end if
  print '("calls ",I0)', merge(3 * iters, iters, what == "p2p")
  call MPI_Finalize()
end program mpi_driver_f08
