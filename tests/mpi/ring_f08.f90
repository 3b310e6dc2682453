! ring_f08.f90 - ring.f90's program with the mpi_f08 module: the same phases,
! calls, counts and printed lines (see ring.f90), for the MPI plugin's mpi_f08
! entries (tests/tests/mpi.rs). Handles are derived types (type(MPI_Comm) ...),
! statuses type(MPI_Status); some calls pass the optional ierror and some do
! not; MPI_IN_PLACE in a gather at its root and in an allreduce. One phase more
! than ring.f90: a send that fails with its ierror left out (mpif.h has no
! optional ierror), which must not count as a message.
module counts_f08
  implicit none
  integer(8) :: sent_n(0:63) = 0, sent_b(0:63) = 0, recv_n(0:63) = 0, recv_b(0:63) = 0
end module counts_f08

program ring_f08
  use mpi_f08
  use kprof
  use counts_f08
  implicit none
  integer, parameter :: rounds = 3, dp = 8
  integer :: ierr, rank, nranks, right, left, k, q, subrank, provided
  type(MPI_Comm) :: sub
  type(MPI_Request) :: reqs(2), req
  type(MPI_Status) :: st, sts(2)
  double precision, allocatable :: outb(:), inb(:), a2a_s(:), a2a_r(:), g(:)
  double precision :: x, y, red(4), redout(4), b(10)
  integer :: ints(4), idx, outcount, indices(2)
  integer, allocatable :: vcounts(:), vdispls(:), ones(:), steps(:)
  double precision, allocatable :: v(:)
  logical :: done

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks)
  right = mod(rank + 1, nranks)
  left = mod(rank + nranks - 1, nranks)
  allocate(outb(rank + 1), inb(left + 1))
  outb = rank

  ! Ring: rank r sends r+1 doubles to the right.
  call kprof_region_begin("ring")
  do k = 1, rounds
    call MPI_Irecv(inb, left + 1, MPI_DOUBLE_PRECISION, left, k, MPI_COMM_WORLD, reqs(1))
    call MPI_Isend(outb, rank + 1, MPI_DOUBLE_PRECISION, right, k, MPI_COMM_WORLD, reqs(2), ierr)
    if (mod(k, 2) == 1) then
      call MPI_Waitall(2, reqs, MPI_STATUSES_IGNORE)
    else
      call MPI_Waitall(2, reqs, sts, ierr)
      if (sts(1)%MPI_SOURCE /= left .or. sts(1)%MPI_TAG /= k) stop 2
    end if
    call sent(right, rank + 1)
    call received(left, left + 1)
  end do
  ! One pair completed by MPI_Wait, one by MPI_Test (in a loop).
  call MPI_Irecv(inb, left + 1, MPI_DOUBLE_PRECISION, left, 10, MPI_COMM_WORLD, req, ierr)
  call MPI_Send(outb, rank + 1, MPI_DOUBLE_PRECISION, right, 10, MPI_COMM_WORLD)
  call MPI_Wait(req, st)
  if (st%MPI_SOURCE /= left) stop 3
  call sent(right, rank + 1)
  call received(left, left + 1)
  call MPI_Irecv(inb, left + 1, MPI_DOUBLE_PRECISION, left, 11, MPI_COMM_WORLD, req)
  call MPI_Send(outb, rank + 1, MPI_DOUBLE_PRECISION, right, 11, MPI_COMM_WORLD, ierr)
  q = 0
  done = .false.
  do while (.not. done)
    call MPI_Test(req, done, MPI_STATUS_IGNORE, ierr)
    q = q + 1
  end do
  call sent(right, rank + 1)
  call received(left, left + 1)
  ! One pair completed by MPI_Waitany, then MPI_Waitsome (whichever first).
  call MPI_Irecv(inb, left + 1, MPI_DOUBLE_PRECISION, left, 12, MPI_COMM_WORLD, reqs(1))
  call MPI_Isend(outb, rank + 1, MPI_DOUBLE_PRECISION, right, 12, MPI_COMM_WORLD, reqs(2))
  call MPI_Waitany(2, reqs, idx, st)
  call MPI_Waitsome(2, reqs, outcount, indices, MPI_STATUSES_IGNORE, ierr)
  ! Indices count from 1, or from 0 in MPICH 4.0's mpi_f08 (its bug, fixed in 4.1).
  if (outcount /= 1 .or. (idx + indices(1) /= 3 .and. idx + indices(1) /= 1)) stop 1
  call sent(right, rank + 1)
  call received(left, left + 1)
  ! Blocking: even ranks send first.
  if (mod(rank, 2) == 0) then
    call MPI_Send(outb, rank + 1, MPI_DOUBLE_PRECISION, right, 20, MPI_COMM_WORLD, ierr)
    call MPI_Recv(inb, left + 1, MPI_DOUBLE_PRECISION, left, 20, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
  else
    call MPI_Recv(inb, left + 1, MPI_DOUBLE_PRECISION, MPI_ANY_SOURCE, 20, MPI_COMM_WORLD, st, ierr)
    if (st%MPI_SOURCE /= left) stop 4
    call MPI_Send(outb, rank + 1, MPI_DOUBLE_PRECISION, right, 20, MPI_COMM_WORLD)
  end if
  call sent(right, rank + 1)
  call received(left, left + 1)
  call kprof_region_end("ring")
  call say_call("ring", "MPI_Irecv", rounds + 3)
  call say_call("ring", "MPI_Isend", rounds + 1)
  call say_call("ring", "MPI_Waitany", 1)
  call say_call("ring", "MPI_Waitsome", 1)
  call say_call("ring", "MPI_Waitall", rounds)
  call say_call("ring", "MPI_Wait", 1)
  call say_call("ring", "MPI_Test", q)
  call say_call("ring", "MPI_Send", 3)
  call say_call("ring", "MPI_Recv", 1)

  ! Collectives.
  call kprof_region_begin("collectives")
  x = rank + 1
  do k = 1, 4
    call MPI_Allreduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  end do
  ! In place: the sum again, in y.
  y = x
  call MPI_Allreduce(MPI_IN_PLACE, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD)
  red = rank
  redout = 0
  call MPI_Reduce(red, redout, 4, MPI_DOUBLE_PRECISION, MPI_MAX, 0, MPI_COMM_WORLD)
  b = rank
  call MPI_Bcast(b, 10, MPI_DOUBLE_PRECISION, 1, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD)
  allocate(a2a_s(2 * nranks), a2a_r(2 * nranks), g(3 * nranks))
  a2a_s = rank
  call MPI_Alltoall(a2a_s, 2, MPI_DOUBLE_PRECISION, a2a_r, 2, MPI_DOUBLE_PRECISION, &
                    MPI_COMM_WORLD, ierr)
  ! The root gathers in place (its send count, 0, is ignored).
  g = rank
  if (rank == 2) then
    call MPI_Gather(MPI_IN_PLACE, 0, MPI_DOUBLE_PRECISION, g, 3, MPI_DOUBLE_PRECISION, 2, &
                    MPI_COMM_WORLD)
  else
    call MPI_Gather(g, 3, MPI_DOUBLE_PRECISION, g, 3, MPI_DOUBLE_PRECISION, 2, &
                    MPI_COMM_WORLD, ierr)
  end if
  ! Rank q contributes q+1 doubles; one double to and from each rank.
  allocate(vcounts(nranks), vdispls(nranks), ones(nranks), steps(nranks))
  allocate(v(nranks * (nranks + 1) / 2))
  do q = 1, nranks
    vcounts(q) = q
    vdispls(q) = (q - 1) * q / 2
    ones(q) = 1
    steps(q) = q - 1
  end do
  call MPI_Allgatherv(outb, rank + 1, MPI_DOUBLE_PRECISION, v, vcounts, vdispls, &
                      MPI_DOUBLE_PRECISION, MPI_COMM_WORLD, ierr)
  call MPI_Alltoallv(a2a_s, ones, steps, MPI_DOUBLE_PRECISION, a2a_r, ones, steps, &
                     MPI_DOUBLE_PRECISION, MPI_COMM_WORLD)
  call kprof_region_end("collectives")
  call say_call("collectives", "MPI_Allreduce", 5)
  call say_call("collectives", "MPI_Barrier", 1)
  call say_coll("MPI_Allreduce", dp, dp)
  call say_coll("MPI_Reduce", 4 * dp, merge(4 * dp, 0, rank == 0))
  call say_coll("MPI_Bcast", merge(10 * dp, 0, rank == 1), merge(0, 10 * dp, rank == 1))
  call say_coll("MPI_Alltoall", 2 * dp * nranks, 2 * dp * nranks)
  call say_coll("MPI_Allgatherv", (rank + 1) * dp, nranks * (nranks + 1) / 2 * dp)
  call say_coll("MPI_Alltoallv", nranks * dp, nranks * dp)
  call say_coll("MPI_Gather", 3 * dp, merge(3 * dp * nranks, 0, rank == 2))

  ! A sub-communicator: ranks of one parity; its rank 0 sends 4 integers to
  ! its rank 1 (world ranks r and r+2).
  call kprof_region_begin("subcomm")
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, sub, ierr)
  call MPI_Comm_rank(sub, subrank)
  ints = rank
  if (subrank == 0 .and. rank + 2 < nranks) then
    call MPI_Send(ints, 4, MPI_INTEGER, 1, 30, sub)
    call sent(rank + 2, 4 / 2)
  else if (subrank == 1) then
    call MPI_Recv(ints, 4, MPI_INTEGER, 0, 30, sub, st, ierr)
    call received(rank - 2, 4 / 2)
  end if
  call MPI_Comm_free(sub)
  call kprof_region_end("subcomm")
  call say_call("subcomm", "MPI_Comm_split", 1)

  ! A send that fails (a tag below 0), its ierror left out: with
  ! MPI_ERRORS_RETURN the program goes on; the call counts, its message does not.
  call kprof_region_begin("errors")
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN)
  call MPI_Send(outb, 1, MPI_DOUBLE_PRECISION, right, -7, MPI_COMM_WORLD)
  call MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL)
  call kprof_region_end("errors")
  call say_call("errors", "MPI_Send", 1)

  do q = 0, nranks - 1
    if (sent_n(q) > 0) print '("rank ",I0," send ",I0," ",I0," ",I0)', rank, q, sent_n(q), sent_b(q)
    if (recv_n(q) > 0) print '("rank ",I0," recv ",I0," ",I0," ",I0)', rank, q, recv_n(q), recv_b(q)
  end do
  print '("rank ",I0," of ",I0,": sum ",F0.1," max ",F0.1," bcast ",F0.1," a2a ",F0.1)', &
    rank, nranks, y, maxval(redout), b(1), sum(a2a_r) + sum(v)
  call MPI_Finalize(ierr)

contains

  ! n doubles (or 2n integers: 8n bytes) to world rank q.
  subroutine sent(q, n)
    integer, intent(in) :: q, n
    sent_n(q) = sent_n(q) + 1
    sent_b(q) = sent_b(q) + 8 * n
  end subroutine sent

  subroutine received(q, n)
    integer, intent(in) :: q, n
    recv_n(q) = recv_n(q) + 1
    recv_b(q) = recv_b(q) + 8 * n
  end subroutine received

  subroutine say_call(region, fn, n)
    character(*), intent(in) :: region, fn
    integer, intent(in) :: n
    print '("rank ",I0," call ",A," ",A," ",I0)', rank, region, fn, n
  end subroutine say_call

  subroutine say_coll(fn, s, r)
    character(*), intent(in) :: fn
    integer, intent(in) :: s, r
    print '("rank ",I0," coll ",A," ",I0," ",I0)', rank, fn, s, r
  end subroutine say_coll
end program ring_f08
