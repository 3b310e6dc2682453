//! Kernel names as profiles and traces show them.

/// A readable kernel name: the demangled signature without the return type (the
/// parameters stay: they tell overloads apart), or the name as it is when it is not
/// a mangled C++ name.
pub fn kernel_name(mangled: &str) -> String {
    if !mangled.starts_with("_Z") {
        return mangled.to_string();
    }
    let Ok(sym) = cpp_demangle::Symbol::new(mangled) else {
        return mangled.to_string();
    };
    let opts = cpp_demangle::DemangleOptions::new().no_return_type();
    sym.demangle(&opts).unwrap_or_else(|_| mangled.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangled_without_the_return_type() {
        assert_eq!(kernel_name("_Z3fooIiEvPT_"), "foo<int>(int*)");
        assert_eq!(
            kernel_name("_Z5saxpyifPKfPf"),
            "saxpy(int, float, float const*, float*)"
        );
        assert_eq!(kernel_name("plain"), "plain");
        assert_eq!(kernel_name("_Zbroken"), "_Zbroken");
    }
}
