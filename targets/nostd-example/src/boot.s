// Entry from QEMU's ELF loader: EL1, MMU off, no stack. Set one up, zero .bss, let the
// Rust code use FP/SIMD (aarch64-unknown-none enables NEON, so any memcpy may use q-registers
// and would trap with CPACR_EL1.FPEN = 0), then call main. main does not return.
    .section .text.boot, "ax"
    .global _start
_start:
    ldr     x0, =__stack_top
    mov     sp, x0
    ldr     x0, =__bss_start
    ldr     x1, =__bss_end
1:  cmp     x0, x1
    b.hs    2f
    str     xzr, [x0], #8
    b       1b
2:  mov     x0, #(3 << 20)
    msr     cpacr_el1, x0
    isb
    bl      main
3:  wfe
    b       3b
