# JAX code: "xla" here is JAX's compiler, not PyTorch/XLA.
import jax
import jax.numpy as jnp
from jax.lib import xla_bridge

print(xla_bridge.get_backend().platform)
print(jax.devices(), jax.default_backend())


@jax.jit
def f(x):
    return jnp.sin(x) * 2


x = jnp.ones((4,))
print(jax.device_put(x, jax.devices()[0]), f(x))
