/* emu_switch(void **save_sp, void *to_sp): the fiber context switch (x86-64 System V).
 *
 * Saves the callee-saved registers on the current stack, stores the stack pointer in *save_sp,
 * and resumes the context whose stack pointer is to_sp. The floating-point control words
 * (MXCSR, x87 CW) are not switched: CUDA code cannot change them, and all fibers of an OS
 * thread share them. About 15 instructions, no system call (glibc's swapcontext makes a
 * sigprocmask system call per switch, which costs about a microsecond).
 *
 * A fresh fiber's stack holds six zero registers and then the address of emu_fiber_entry,
 * which the final ret jumps to (sched.cpp, fiber_prepare). */
    .text
    .globl  emu_switch
    .type   emu_switch, @function
    .p2align 4
emu_switch:
    pushq   %rbp
    pushq   %rbx
    pushq   %r12
    pushq   %r13
    pushq   %r14
    pushq   %r15
    movq    %rsp, (%rdi)
    movq    %rsi, %rsp
    popq    %r15
    popq    %r14
    popq    %r13
    popq    %r12
    popq    %rbx
    popq    %rbp
    ret
    .size   emu_switch, .-emu_switch

    .section .note.GNU-stack, "", @progbits
