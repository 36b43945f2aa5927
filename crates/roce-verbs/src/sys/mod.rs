//! What the safe layers build on that needs `unsafe` outside the C ABI: application memory
//! reached through a raw pointer ([`memory::AppMemory`]), the checks the kernel's pinning makes
//! before a region is registered ([`mapping`]), the eventfd of completion channels
//! ([`eventfd::EventFd`]) and the fork watch ([`fork`]). Depends on nothing else of the crate; each `unsafe` block has its
//! `// SAFETY:` line.

pub mod eventfd;
pub mod fork;
pub mod mapping;
pub mod memory;
