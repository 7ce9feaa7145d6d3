//! A read-only memory map of a generated stream: both bench sides read gigabytes of it without
//! copying it into their own heap.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::Context;

pub(crate) struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only and owned by this value.
unsafe impl Send for Mapped {}
// SAFETY: as for Send: nothing writes through the mapping, so shared reads are sound.
unsafe impl Sync for Mapped {}

impl Mapped {
    pub(crate) fn open(path: &Path) -> anyhow::Result<Mapped> {
        let file = File::open(path).with_context(|| format!("opening {}", path.display()))?;
        let len = usize::try_from(file.metadata()?.len())?;
        if len == 0 {
            return Ok(Mapped {
                ptr: std::ptr::null_mut(),
                len: 0,
            });
        }
        // SAFETY: a fresh private read-only mapping of a file we opened; checked for failure.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ,
                libc::MAP_PRIVATE,
                file.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(std::io::Error::last_os_error())
                .with_context(|| format!("mapping {}", path.display()));
        }
        // SAFETY: the mapping is valid; advice is only a hint.
        unsafe { libc::madvise(ptr, len, libc::MADV_SEQUENTIAL) };
        Ok(Mapped { ptr, len })
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        if self.len == 0 {
            return &[];
        }
        // SAFETY: ptr..ptr+len is mapped readable for the lifetime of self. The bench never
        // modifies stream files while they are mapped.
        unsafe { std::slice::from_raw_parts(self.ptr as *const u8, self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        if self.len > 0 {
            // SAFETY: unmapping exactly what open() mapped.
            unsafe { libc::munmap(self.ptr, self.len) };
        }
    }
}
