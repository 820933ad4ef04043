// Package quietsys makes the system calls that never wait without
// telling Go's scheduler of them (syscall.RawSyscall).
//
// Why: a system call the scheduler is told of (syscall.Syscall), made
// while every processor is idle, wakes the runtime's monitor thread
// (sysmon), which then checks every 20 µs for about a millisecond and
// backs off over the next twenty milliseconds. A process that wakes for a
// short piece of work many times a second, as the collector's pollers do
// between their passes, pays dozens of the monitor's sleeps and wakes for
// each: at 2,000 targets on the 2-vCPU virtual machine of
// docs/BENCHMARKS.md the monitor took 10-12 % of the collector's CPU.
// A call made here holds its processor while it runs, so only calls that
// return at once belong here: reads of non-blocking descriptors, and
// looks at an epoll set that do not wait.
//
// Batch goes further for a pass over many sockets: their reads in one
// system call (an io_uring's, each read done as it is submitted, none
// left waiting in the kernel), where the kernel allows it. Entering the
// kernel is most of a small read's cost under a hypervisor that traps
// system calls: at 2,000 targets, reading a pass's connections in one
// batch took a tenth off the collector's CPU an item (docs/BENCHMARKS.md).
package quietsys
