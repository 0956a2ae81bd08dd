//! Typed kernel launches: every kernel of `kernels/*.cu` is declared once, in the Rust
//! module of its file under [`crate::gpu::kernels`], with its arguments in order, their
//! types and the lengths its contract reads; a launch is then one call,
//! `KernelName { field: value, … }.launch(gpu, stream, config)`, which
//!
//! 1. checks every buffer against the length its declaration states and every index
//!    against the range of the kernel's integer type ([`KernelError`], naming the kernel and
//!    the argument, instead of a kernel reading past an allocation),
//! 2. loads the kernel (its file compiled for the device, with the file's constants and the
//!    variant's defines, see [`crate::gpu::kernels`]),
//! 3. pushes the arguments in the declared order and launches, in the one `unsafe` block of
//!    the GPU layer's launches, below.
//!
//! The declarations are checked against the kernels as compiled: the test
//! `gpu::kernels::tests::declarations_match_ptx` compares each declared argument list with
//! the parameters NVRTC gives the kernel's PTX entry (count, order, size and kind), for
//! every kernel of every file, and fails on a kernel nobody declared.
//!
//! # Declaring a kernel
//!
//! ```text
//! kernels! {
//!     file: Knn;
//!     /// Doc: what the kernel does and the parts of its contract a length cannot state.
//!     pub struct KnnFill = "knn_fill" {
//!         dist: out f32 [count],     // a buffer the kernel writes, at least `count` long
//!         idx: out i32 [count],
//!         count: usize as i64,       // a size: usize here, `long long` in the kernel
//!         value: f32,                // any other value, passed as it is
//!     }
//! }
//! ```
//!
//! Argument kinds: `in T [len]` (read), `out T [len]` (written), `opt T [len]` (written
//! when given, a null pointer otherwise), `usize as C` (a size or index, checked to fit C),
//! `host` (a `usize` the kernel does not receive: it picks the variant in the name
//! template, e.g. `"attract_ell_{dims}d"`, or sizes the buffers), `defines` (NVRTC defines
//! selecting a variant of the file) and any other type (passed by value). Lengths are
//! expressions over the `usize` and `host` arguments. A generic `<T>` makes the element
//! type of the repulsion's grids a parameter ([`DeviceReal`]), compiled with its defines.
//!
//! With `SGTSNE_SYNC_KERNELS=1` in the environment every launch waits for its kernel, so a
//! fault that the device reports later (an illegal address, a trap) is reported with the
//! name of the kernel that caused it; without it launches are asynchronous, and such a
//! fault surfaces at the next synchronisation.
//!
//! [`DeviceReal`]: crate::gpu::real::DeviceReal

use std::sync::OnceLock;

use cudarc::driver::{
    CudaFunction, CudaSlice, CudaStream, CudaView, CudaViewMut, DriverError, LaunchArgs,
    PushKernelArg,
};

use super::kernels::KernelId;
use super::{Gpu, GpuError};

/// A device buffer a kernel reads: a whole [`CudaSlice`] or a view of one.
pub trait DeviceIn<T> {
    /// Elements the buffer holds.
    fn len(&self) -> usize;
    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pushes the buffer's pointer (and cudarc's stream-ordering events) onto `args`.
    fn push<'b>(&'b self, args: &mut LaunchArgs<'b>);
}

/// A device buffer a kernel writes: a whole [`CudaSlice`] or a mutable view of one.
pub trait DeviceOut<T> {
    /// Elements the buffer holds.
    fn len(&self) -> usize;
    /// Whether it holds none.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Pushes the buffer's pointer (and cudarc's stream-ordering events) onto `args`.
    fn push<'b>(&'b mut self, args: &mut LaunchArgs<'b>);
}

impl<T> DeviceIn<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        CudaSlice::len(self)
    }
    fn push<'b>(&'b self, args: &mut LaunchArgs<'b>) {
        args.arg(self);
    }
}

impl<T> DeviceIn<T> for CudaView<'_, T> {
    fn len(&self) -> usize {
        CudaView::len(self)
    }
    fn push<'b>(&'b self, args: &mut LaunchArgs<'b>) {
        args.arg(self);
    }
}

impl<T> DeviceOut<T> for CudaSlice<T> {
    fn len(&self) -> usize {
        CudaSlice::len(self)
    }
    fn push<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(self);
    }
}

impl<T> DeviceOut<T> for CudaViewMut<'_, T> {
    fn len(&self) -> usize {
        CudaViewMut::len(self)
    }
    fn push<'b>(&'b mut self, args: &mut LaunchArgs<'b>) {
        args.arg(self);
    }
}

/// The null pointer an `opt` argument passes when it is not given.
pub static NULL: u64 = 0;

/// How a kernel parameter appears in PTX, for the declarations' check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Param {
    /// A device pointer (`.u64`).
    Pointer,
    /// A 32-bit integer (`.u32`, `.s32`, `.b32`).
    Int32,
    /// A 64-bit integer (`.u64`, `.s64`, `.b64`).
    Int64,
    /// `float` (`.f32`).
    F32,
    /// `double` (`.f64`).
    F64,
    /// A struct of this many bytes, passed by value (`.b8 name[N]`).
    Bytes(usize),
}

impl Param {
    /// Whether PTX's parameter `ptx` (its type, and `[N]` for byte arrays) can be this.
    pub fn matches(self, ty: &str, bytes: Option<usize>) -> bool {
        match self {
            Param::Pointer | Param::Int64 => matches!(ty, ".u64" | ".s64" | ".b64"),
            Param::Int32 => matches!(ty, ".u32" | ".s32" | ".b32"),
            Param::F32 => ty == ".f32",
            Param::F64 => ty == ".f64",
            Param::Bytes(n) => ty == ".b8" && bytes == Some(n),
        }
    }
}

/// A type a kernel takes by value, with its PTX parameter.
pub trait KernelValue: cudarc::driver::DeviceRepr {
    /// How the kernel's parameter of this type appears in PTX.
    const PARAM: Param;
}

impl KernelValue for i32 {
    const PARAM: Param = Param::Int32;
}
impl KernelValue for u32 {
    const PARAM: Param = Param::Int32;
}
impl KernelValue for i64 {
    const PARAM: Param = Param::Int64;
}
impl KernelValue for f32 {
    const PARAM: Param = Param::F32;
}
impl KernelValue for f64 {
    const PARAM: Param = Param::F64;
}

/// One kernel as declared: its file, name template and parameters in order (`None` for
/// arguments the kernel does not receive).
#[derive(Clone, Copy, Debug)]
pub struct Declared {
    /// The file it is in.
    pub file: KernelId,
    /// Its name, `{…}` standing for a variant number (`"attract_ell_{dims}d"`).
    pub template: &'static str,
    /// Its arguments' parameters.
    pub params: &'static [Option<Param>],
}

impl Declared {
    /// Whether the kernel `name` is an instance of this declaration's template (each `{…}`
    /// stands for one or more digits).
    pub fn names(&self, name: &str) -> bool {
        fn rest<'a>(name: &'a str, literal: &str) -> Option<&'a str> {
            name.strip_prefix(literal)
        }
        let mut pieces = self.template.split('{');
        let mut name = match rest(name, pieces.next().unwrap_or("")) {
            Some(r) => r,
            None => return false,
        };
        for piece in pieces {
            let Some((_, literal)) = piece.split_once('}') else {
                return false;
            };
            let digits = name.len() - name.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            if digits == 0 {
                return false;
            }
            name = match rest(&name[digits..], literal) {
                Some(r) => r,
                None => return false,
            };
        }
        name.is_empty()
    }

    /// The parameters the kernel receives, in order.
    pub fn received(&self) -> Vec<Param> {
        self.params.iter().flatten().copied().collect()
    }
}

/// What is wrong with a launch, or what went wrong in it.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// A buffer is shorter than the kernel's contract reads.
    #[error("argument `{arg}` holds {have} elements; the kernel reads {need}")]
    TooShort {
        arg: &'static str,
        need: usize,
        have: usize,
    },
    /// A size does not fit the kernel's integer type.
    #[error("argument `{arg}` = {value} does not fit the kernel's {ty}")]
    OutOfRange {
        arg: &'static str,
        value: usize,
        ty: &'static str,
    },
    /// The driver refused to load or launch the kernel, or reported a fault in it.
    #[error(transparent)]
    Driver(#[from] DriverError),
}

/// A launch under way: the kernel's file and name, for its errors.
pub struct Launch<'a> {
    file: KernelId,
    name: &'a str,
}

impl<'a> Launch<'a> {
    /// A launch of kernel `name` of `file`.
    pub fn new(file: KernelId, name: &'a str) -> Self {
        Launch { file, name }
    }

    /// The error of this launch.
    pub fn error(&self, error: impl Into<KernelError>) -> GpuError {
        GpuError::Kernel {
            file: self.file.file(),
            name: self.name.to_string(),
            error: error.into(),
        }
    }

    /// The kernel, loaded (its file compiled first if needed); a driver error names it.
    pub fn function(
        &self,
        gpu: &Gpu,
        defines: &'static [&'static str],
    ) -> Result<CudaFunction, GpuError> {
        gpu.function(self.file, defines, self.name)
            .map_err(|e| match e {
                GpuError::Driver(d) => self.error(d),
                other => other,
            })
    }

    /// Checks that buffer `arg` of `have` elements holds the `need` its contract reads.
    pub fn check(&self, arg: &'static str, have: usize, need: usize) -> Result<(), GpuError> {
        if have < need {
            return Err(self.error(KernelError::TooShort { arg, need, have }));
        }
        Ok(())
    }

    /// `value` as the kernel's integer type `C`, or an error naming `arg`.
    pub fn index<C: TryFrom<usize>>(&self, arg: &'static str, value: usize) -> Result<C, GpuError> {
        C::try_from(value).map_err(|_| {
            self.error(KernelError::OutOfRange {
                arg,
                value,
                ty: std::any::type_name::<C>(),
            })
        })
    }

    /// Ends the launch: its driver result, and with `SGTSNE_SYNC_KERNELS=1` the kernel's
    /// own completion, both attributed to the kernel.
    pub fn finish<E>(
        &self,
        stream: &CudaStream,
        launched: Result<E, DriverError>,
    ) -> Result<(), GpuError> {
        launched.map_err(|e| self.error(e))?;
        if sync_kernels() {
            stream.synchronize().map_err(|e| self.error(e))?;
        }
        Ok(())
    }
}

/// Whether `SGTSNE_SYNC_KERNELS=1` asks every launch to wait for its kernel (read once).
fn sync_kernels() -> bool {
    static SYNC: OnceLock<bool> = OnceLock::new();
    *SYNC.get_or_init(|| std::env::var_os("SGTSNE_SYNC_KERNELS").is_some_and(|v| v == "1"))
}

/// Declares the kernels of one file (see the module docs for the syntax).
macro_rules! kernels {
    (
        file: $file:ident;
        $(
            $(#[$meta:meta])*
            $vis:vis struct $name:ident $(<$t:ident>)? = $template:literal { $($fields:tt)* }
        )*
    ) => {
        $(
            $crate::gpu::launch::kernels!(@munch [$file] [$(#[$meta])* $vis $name [$($t)?] $template] [] $($fields)*);
        )*
        /// Every kernel the file declares, for the check against its PTX.
        #[allow(dead_code)]
        pub(crate) const DECLARED: &[$crate::gpu::launch::Declared] =
            &[$($crate::gpu::launch::kernels!(@declared $name [$($t)?])),*];
    };

    (@declared $name:ident []) => { $name::DECLARED };
    (@declared $name:ident [$t:ident]) => { $name::<f32>::DECLARED };

    // Fields, one at a time, into (kind name rest…).
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : in $ty:ty [$len:expr] $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (input $f ($ty) ($len))] $($($more)*)?);
    };
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : out $ty:ty [$len:expr] $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (output $f ($ty) ($len))] $($($more)*)?);
    };
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : opt $ty:ty [$len:expr] $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (optional $f ($ty) ($len))] $($($more)*)?);
    };
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : usize as $c:ty $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (index $f ($c) ())] $($($more)*)?);
    };
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : host $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (host $f (usize) ())] $($($more)*)?);
    };
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : defines $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (defines $f (&'static [&'static str]) ())] $($($more)*)?);
    };
    (@munch $file:tt $head:tt [$($acc:tt)*] $f:ident : $ty:ty $(, $($more:tt)*)?) => {
        $crate::gpu::launch::kernels!(@munch $file $head [$($acc)* (value $f ($ty) ())] $($($more)*)?);
    };
    (@munch [$file:ident] [$(#[$meta:meta])* $vis:vis $name:ident [$($t:ident)?] $template:literal]
        [$(($kind:ident $f:ident ($($ty:tt)*) ($($len:tt)*)))*]) => {
        $(#[$meta])*
        #[doc = concat!("\n\nKernel `", $template, "` of `kernels/", stringify!($file), "`; launched by [`", stringify!($name), "::launch`].")]
        $vis struct $name<'a $(, $t: $crate::gpu::real::DeviceReal)?> {
            $(
                #[allow(missing_docs)]
                pub $f: $crate::gpu::launch::kernels!(@type 'a $kind ($($ty)*)),
            )*
        }

        impl<'a $(, $t: $crate::gpu::real::DeviceReal)?> $name<'a $(, $t)?> {
            /// The declaration, for the check against the compiled kernel.
            #[allow(dead_code)]
            pub(crate) const DECLARED: $crate::gpu::launch::Declared = $crate::gpu::launch::Declared {
                file: $crate::gpu::kernels::KernelId::$file,
                template: $template,
                params: &[$($crate::gpu::launch::kernels!(@param $kind ($($ty)*))),*],
            };

            /// Checks the arguments, then queues the kernel on `stream` with `config`.
            #[allow(unused_variables, clippy::redundant_locals)]
            pub fn launch(
                self,
                gpu: &$crate::gpu::Gpu,
                stream: &cudarc::driver::CudaStream,
                config: cudarc::driver::LaunchConfig,
            ) -> ::std::result::Result<(), $crate::gpu::GpuError> {
                let $name { $($f),* } = self;
                let name = ::std::format!($template);
                let defines: &'static [&'static str] = &[];
                $( let defines = <$t as $crate::gpu::real::DeviceReal>::DEFINES; )?
                $( $crate::gpu::launch::kernels!(@defines defines $kind $f); )*
                let launch = $crate::gpu::launch::Launch::new($crate::gpu::kernels::KernelId::$file, &name);
                $( $crate::gpu::launch::kernels!(@check launch $kind $f ($($len)*)); )*
                $( $crate::gpu::launch::kernels!(@convert launch $kind $f ($($ty)*)); )*
                let function = launch.function(gpu, defines)?;
                let mut args = stream.launch_builder(&function);
                $( $crate::gpu::launch::kernels!(@push args $kind $f); )*
                // SAFETY: the arguments pushed are the kernel's parameters in order, with
                // their types (the declaration above, which
                // `gpu::kernels::tests::declarations_match_ptx` checks against the kernel's
                // PTX entry); every buffer holds at least the elements the kernel's contract
                // reads or writes (the lengths declared above, checked just before) and every
                // size fits the kernel's integer type; what a length cannot say (indices
                // inside rows, permutations, sorted lists) comes from the kernels of the same
                // stage that wrote those buffers, as each declaration's doc and its file's
                // header state. The buffers stay borrowed until the launch is queued, and
                // cudarc orders their later frees and copies after it.
                let launched = unsafe { args.launch(config) };
                launch.finish(stream, launched)
            }
        }
    };

    (@type $lt:lifetime input ($($ty:tt)*)) => { &$lt dyn $crate::gpu::launch::DeviceIn<$($ty)*> };
    (@type $lt:lifetime output ($($ty:tt)*)) => { &$lt mut dyn $crate::gpu::launch::DeviceOut<$($ty)*> };
    (@type $lt:lifetime optional ($($ty:tt)*)) => { Option<&$lt mut dyn $crate::gpu::launch::DeviceOut<$($ty)*>> };
    (@type $lt:lifetime index ($($ty:tt)*)) => { usize };
    (@type $lt:lifetime host ($($ty:tt)*)) => { usize };
    (@type $lt:lifetime defines ($($ty:tt)*)) => { $($ty)* };
    (@type $lt:lifetime value ($($ty:tt)*)) => { $($ty)* };

    (@param input $ty:tt) => { Some($crate::gpu::launch::Param::Pointer) };
    (@param output $ty:tt) => { Some($crate::gpu::launch::Param::Pointer) };
    (@param optional $ty:tt) => { Some($crate::gpu::launch::Param::Pointer) };
    (@param index ($($ty:tt)*)) => { Some(<$($ty)* as $crate::gpu::launch::KernelValue>::PARAM) };
    (@param host $ty:tt) => { None };
    (@param defines $ty:tt) => { None };
    (@param value ($($ty:tt)*)) => { Some(<$($ty)* as $crate::gpu::launch::KernelValue>::PARAM) };

    (@defines $d:ident defines $f:ident) => { let $d = $f; };
    (@defines $d:ident $kind:ident $f:ident) => {};

    (@check $l:ident input $f:ident ($($len:tt)*)) => { $l.check(stringify!($f), $f.len(), $($len)*)?; };
    (@check $l:ident output $f:ident ($($len:tt)*)) => { $l.check(stringify!($f), $f.len(), $($len)*)?; };
    (@check $l:ident optional $f:ident ($($len:tt)*)) => {
        if let Some(buffer) = &$f {
            $l.check(stringify!($f), buffer.len(), $($len)*)?;
        }
    };
    (@check $l:ident $kind:ident $f:ident $len:tt) => {};

    (@convert $l:ident index $f:ident ($($ty:tt)*)) => { let $f: $($ty)* = $l.index(stringify!($f), $f)?; };
    (@convert $l:ident $kind:ident $f:ident $ty:tt) => {};

    (@push $a:ident input $f:ident) => { $f.push(&mut $a); };
    (@push $a:ident output $f:ident) => { $f.push(&mut $a); };
    (@push $a:ident optional $f:ident) => {
        match $f {
            Some(buffer) => buffer.push(&mut $a),
            None => {
                cudarc::driver::PushKernelArg::arg(&mut $a, &$crate::gpu::launch::NULL);
            }
        }
    };
    (@push $a:ident index $f:ident) => { cudarc::driver::PushKernelArg::arg(&mut $a, &$f); };
    (@push $a:ident value $f:ident) => { cudarc::driver::PushKernelArg::arg(&mut $a, &$f); };
    (@push $a:ident host $f:ident) => {};
    (@push $a:ident defines $f:ident) => {};
}

pub(crate) use kernels;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_name_their_instances() {
        let d = |template| Declared {
            file: KernelId::Knn,
            template,
            params: &[],
        };
        assert!(d("knn_fill").names("knn_fill"));
        assert!(!d("knn_fill").names("knn_fill2"));
        assert!(d("attract_ell_{dims}d").names("attract_ell_2d"));
        assert!(!d("attract_ell_{dims}d").names("attract_ell_d"));
        assert!(!d("attract_ell_{dims}d").names("attract_coo_2d"));
        assert!(d("knn_select_{kr}").names("knn_select_12"));
        assert!(!d("knn_select_{kr}").names("knn_select_"));
        assert!(!d("knn_select_{kr}").names("knn_select_1x"));
    }

    #[test]
    fn params_match_their_ptx_types() {
        assert!(Param::Pointer.matches(".u64", None));
        assert!(Param::Int64.matches(".b64", None));
        assert!(!Param::Int32.matches(".u64", None));
        assert!(Param::F32.matches(".f32", None));
        assert!(!Param::F32.matches(".f64", None));
        assert!(Param::Bytes(32).matches(".b8", Some(32)));
        assert!(!Param::Bytes(32).matches(".b8", Some(28)));
    }
}
