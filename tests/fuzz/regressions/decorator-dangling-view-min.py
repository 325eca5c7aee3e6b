@srntorc
def rn(: