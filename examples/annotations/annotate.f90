! The kprof annotation API from Fortran (module kprof, ffi-headers/kprof.f90).
! Profile it:
!
!   gfortran -O2 -g <prefix>/include/kprof/kprof.f90 annotate.f90 \
!       -L<prefix>/lib -lkprof_core -Wl,-rpath,<prefix>/lib -o annotate_f
!   kprof run -- ./annotate_f
program annotate
  use kprof
  implicit none
  integer :: i, k
  double precision :: s

  call kprof_metadata("example", "annotate.f90")
  s = 0.0d0
  call kprof_region_begin("solve")
  do i = 1, 5
    call kprof_region_begin("step")
    do k = 1, 200000
      s = s + 1.0d0 / (dble(k) * dble(k))
    end do
    call kprof_counter("partial sum", s)
    call kprof_region_end("step")
  end do
  call kprof_region_end("solve")
  call kprof_event("done")
  print '(a, f10.6)', 'sum ', s
end program annotate
