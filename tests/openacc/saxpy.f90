! saxpy.f90 - an OpenACC Fortran program for tests/tests/openacc.rs, built with
! `gfortran -fopenacc` (host fallback). Per round: a data region holding a
! parallel loop and an update, then a kernels construct. Prints a checksum.
program saxpy
  implicit none
  integer, parameter :: n = 1000, rounds = 3
  real :: x(n), y(n)
  integer :: i, r
  x = 1.0
  y = 2.0
  do r = 1, rounds
    !$acc data copyin(x) copy(y)
    !$acc parallel loop
    do i = 1, n
      y(i) = 2.0 * x(i) + y(i)
    end do
    !$acc update host(y)
    !$acc end data
    !$acc kernels
    y(1) = y(1) + 1.0
    !$acc end kernels
  end do
  print '(a,f10.1)', 'checksum ', sum(y)
end program saxpy
