! kprof.f90 - Fortran interface to the kprof annotation API (kprof.h), over
! iso_c_binding. Compile this file with your program (it produces kprof.mod) and
! link with -lkprof_core:
!
!   use kprof
!   call kprof_region_begin("solve")
!   ...
!   call kprof_region_end("solve")
!   call kprof_counter("residual", 1.0d-3)
!   call kprof_event("converged")
!   call kprof_metadata("mesh", "cube-64")
!
! The wrappers take ordinary Fortran strings (trailing blanks are removed) and add
! the terminating NUL. The bare C functions are available as kprof_c_*.
module kprof
  use, intrinsic :: iso_c_binding, only: c_char, c_double, c_null_char
  implicit none
  private
  public :: kprof_region_begin, kprof_region_end, kprof_event, kprof_counter, &
            kprof_metadata, kprof_finalize
  public :: kprof_c_region_begin, kprof_c_region_end, kprof_c_event, &
            kprof_c_counter, kprof_c_metadata, kprof_c_finalize

  interface
    subroutine kprof_c_region_begin(name) bind(C, name="kprof_region_begin")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    subroutine kprof_c_region_end(name) bind(C, name="kprof_region_end")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    subroutine kprof_c_event(name) bind(C, name="kprof_event")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine
    subroutine kprof_c_counter(name, value) bind(C, name="kprof_counter")
      import :: c_char, c_double
      character(kind=c_char), dimension(*), intent(in) :: name
      real(c_double), value, intent(in) :: value
    end subroutine
    subroutine kprof_c_metadata(key, value) bind(C, name="kprof_metadata")
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: key
      character(kind=c_char), dimension(*), intent(in) :: value
    end subroutine
    subroutine kprof_c_finalize() bind(C, name="kprof_finalize")
    end subroutine
  end interface

contains

  ! Opens a region on the calling thread.
  subroutine kprof_region_begin(name)
    character(len=*), intent(in) :: name
    call kprof_c_region_begin(trim(name) // c_null_char)
  end subroutine

  ! Closes the innermost open region of the calling thread.
  subroutine kprof_region_end(name)
    character(len=*), intent(in), optional :: name
    if (present(name)) then
      call kprof_c_region_end(trim(name) // c_null_char)
    else
      call kprof_c_region_end(c_null_char)
    end if
  end subroutine

  ! Records a marker event.
  subroutine kprof_event(name)
    character(len=*), intent(in) :: name
    call kprof_c_event(trim(name) // c_null_char)
  end subroutine

  ! Records a value of the counter `name` (a real(c_double), e.g. 1.0d0).
  subroutine kprof_counter(name, value)
    character(len=*), intent(in) :: name
    real(c_double), intent(in) :: value
    call kprof_c_counter(trim(name) // c_null_char, value)
  end subroutine

  ! Records a key/value pair in the profile's metadata.
  subroutine kprof_metadata(key, value)
    character(len=*), intent(in) :: key, value
    call kprof_c_metadata(trim(key) // c_null_char, trim(value) // c_null_char)
  end subroutine

  ! Writes all output now and stops measuring (also done at exit).
  subroutine kprof_finalize()
    call kprof_c_finalize()
  end subroutine

end module kprof
