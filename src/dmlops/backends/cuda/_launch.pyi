def launch_kernel(
    function: int,
    gx: int,
    gy: int,
    gz: int,
    bx: int,
    by: int,
    bz: int,
    shared: int,
    stream: int,
    params: int,
    extra: int,
) -> None: ...
