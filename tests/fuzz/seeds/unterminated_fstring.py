x = f'{model(x)!r:>{w}}' f"{ {'a': 1}['a'] }" rf'''{'''
