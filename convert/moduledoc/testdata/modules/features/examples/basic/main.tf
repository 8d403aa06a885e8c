module "features" {
  source   = "../.."
  password = "correct-horse-battery-staple-1"
}

output "id" {
  value = module.features.id
}
