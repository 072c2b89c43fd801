# Recursive Fibonacci: function calls, comparisons and small-int arithmetic.
def fib(n: int) -> int:
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


print("fib(27) =", fib(27))
